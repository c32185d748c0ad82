import { collectSubFields } from '@graphql-tools/utils';
import { type FieldNode, getNamedType, type GraphQLResolveInfo, isObjectType } from 'graphql';

// What an operation selects below the field being resolved, as graphql-js executes it (fragments expanded,
// @skip/@include applied, by @graphql-tools/utils' collectSubFields): the list statements read only the
// columns the selection needs, and the REST `select` reaches them through the operations' @include flags.

/**
 * The names (not aliases) of the fields the operation selects at `path` below the current field. `null`
 * when the path is not selected at all.
 */
export function selectedFields(info: GraphQLResolveInfo, path: readonly string[]): Set<string> | null {
  let type = getNamedType(info.returnType);
  let nodes: FieldNode[] = [...info.fieldNodes];
  for (const name of path) {
    if (!isObjectType(type)) return null;
    const next = [...subfields(info, type, nodes).values()].flat().filter((node) => node.name.value === name);
    const field = type.getFields()[name];
    if (next.length === 0 || !field) return null;
    type = getNamedType(field.type);
    nodes = next;
  }
  if (!isObjectType(type)) return null;
  return new Set([...subfields(info, type, nodes).values()].flat().map((node) => node.name.value));
}

function subfields(info: GraphQLResolveInfo, type: Parameters<typeof collectSubFields>[3], nodes: FieldNode[]): Map<string, FieldNode[]> {
  return collectSubFields(info.schema, info.fragments, info.variableValues, type, nodes).fields;
}
