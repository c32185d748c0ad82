// The columns a list can be filtered and sorted by, described once per resource: the filter and order
// inputs of the GraphQL schema are generated from the same tables (graphql/filters.ts), and the renderers
// read them. A table says where a column lives in one of two ways, and the renderer takes only its own:
// a Prisma field path (lists read through Prisma) or an SQL expression (lists read with hand-written SQL),
// so a column the SQL renderer cannot reach is a type error, not a failure at run time.

/** What a column holds: it picks the filter input (`StringFilter`, `DateTimeFilter`, …) and the SQL array type. */
export type ColumnKind = 'string' | 'dateTime' | 'boolean' | 'enum';

interface ColumnFacts {
  kind: ColumnKind;
  nullable: boolean;
}

/** A column of a list read through Prisma. */
export interface PrismaColumn extends ColumnFacts {
  /** Prisma field name; a dotted path (`application.category.slug`) reaches through to-one relations. */
  field: string;
  /** A BigInt field: a cursor carries its value as text (JSON has no 64-bit integers). */
  bigint?: boolean;
}

/** A column of a list read with hand-written SQL. */
export interface SqlColumn extends ColumnFacts {
  /** Quoted and qualified by the statement's alias, as Prisma writes it: `"t0"."started_at"`. */
  sql: string;
  /** PostgreSQL type for array parameters (`= ANY($n::<type>[])`) when the kind does not say it, e.g. `sync_status`. */
  sqlType?: string;
}

/**
 * A resource's filterable and sortable columns by field name. Every resource has `id`: it breaks ties in
 * every order, so pages are stable.
 */
export type Columns<Column extends ColumnFacts = PrismaColumn | SqlColumn> = Readonly<Record<string, Column>> & { readonly id: Column };

/** A Prisma list's columns keyed by Prisma field, from each one's kind: `{ id: 'string', name: 'string?' }`, `?` meaning nullable. */
export function prismaColumns<Field extends string>(kinds: Readonly<Record<Field | 'id', ColumnKind | `${ColumnKind}?`>>) {
  const column = (field: string, kind: string) => ({ field, kind: kind.replace('?', '') as ColumnKind, nullable: kind.endsWith('?') });
  const columns = Object.entries<string>(kinds).map(([field, kind]) => [field, column(field, kind)]);
  return Object.fromEntries(columns) as Columns<PrismaColumn> & Readonly<Record<Field, PrismaColumn>>;
}
