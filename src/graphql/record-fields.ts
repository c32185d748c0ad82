import type { FieldMap } from '@pothos/core';
import type { ColumnType, RecordField } from '../domain/record-descriptor.js';

/** The GraphQL type of a column's plain expose, by its PostgreSQL type (an enum's is the resource's). */
const SCALARS: Partial<Record<ColumnType, unknown>> = {
  text: 'String',
  'text[]': ['String'],
  timestamptz: 'DateTime',
  boolean: 'Boolean',
  integer: 'Int',
};

/**
 * A record descriptor's fields (domain/record-descriptor.ts) on its GraphQL object type, in the descriptor's
 * order: each a plain expose of its column, but those it marks `custom`, which are `custom`'s fields for it; a
 * field without `graphql` is not shown. `enums` are the resource's enum types, by the column type they show.
 */
export function recordFields(
  t: { expose: (...args: never[]) => unknown },
  fields: Readonly<Record<string, RecordField>>,
  custom: Readonly<Record<string, FieldMap>>,
  enums: Partial<Record<ColumnType, unknown>>,
): FieldMap {
  return Object.fromEntries(
    Object.entries(fields).flatMap(([property, field]) => {
      if (field.graphql === undefined) return [];
      if (field.graphql === 'custom') return Object.entries(custom[property]!);
      const description = field.graphql === true ? undefined : field.graphql;
      const type = field.graphqlId ? 'ID' : (enums[field.type] ?? SCALARS[field.type]);
      return [[property, t.expose(property as never, { type, nullable: field.nullable === true, description } as never)]];
    }),
  ) as FieldMap;
}
