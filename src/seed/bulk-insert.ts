import { type ColumnType, columnOf, type RecordField } from '../domain/record-descriptor.js';

// The bulk loaders' statement shape (syncs.ts, connections.ts), from a record descriptor: every column travels as
// one text[] parameter ($2 on; $1 is the tenant), so the statement text is fixed whatever the batch size (one
// cached plan), and text arrays serialize identically through node-postgres and PGlite. Each is cast back to
// its column's type; an array travels as a JSON array, unpacked per row (unnest would flatten a 2-D array).

/** What a loader's INSERT writes of `properties`: the column list, each column's value read from `t`, and `t`. */
export function unnestedColumns(fields: Readonly<Record<string, RecordField>>, properties: readonly string[]) {
  const names = properties.map(columnOf);
  const values = properties.map((property, i) => {
    const { type } = fields[property]!;
    const text = `t.${names[i]}`;
    if (type === 'text[]') return `ARRAY(SELECT jsonb_array_elements_text(${text}::jsonb))`;
    return type === 'text' ? text : `${text}::${type}`;
  });
  const from = `unnest(${names.map((_, i) => `$${i + 2}::text[]`).join(', ')}) AS t(${names.join(', ')})`;
  return { columns: names.join(', '), values: values.join(', '), from };
}

/** A value as the text its column's parameter carries (cast back to the column's type by the INSERT). */
function asText(value: unknown, type: ColumnType): string | null {
  if (value === null) return null;
  if (type === 'timestamptz') return (value as Date).toISOString();
  return type === 'jsonb' || type === 'text[]' ? JSON.stringify(value) : String(value);
}

/** The loader's parameters after the tenant: one text[] per property, each row's value as text. */
export function unnestedValues<Row>(
  fields: Readonly<Record<string, RecordField>>,
  properties: readonly (keyof Row & string)[],
  rows: readonly Row[],
): (string | null)[][] {
  return properties.map((property) => rows.map((row) => asText(row[property], fields[property]!.type)));
}
