import { collectSubFields } from '@graphql-tools/utils';
import { type FieldNode, getNamedType, type GraphQLResolveInfo, isObjectType } from 'graphql';

// What an operation selects below the field being resolved, as graphql-js executes it (fragments expanded,
// @skip/@include applied, by @graphql-tools/utils' collectSubFields): the list statements read only the
// columns the selection needs, and the REST `select` reaches them through the operations' @include flags.

/**
 * Answers already worked out, per field node of a parsed document (yoga caches parsed documents, and every
 * REST route runs one fixed document) and per combination of its Boolean variables: the only variables
 * @skip/@include can read. Walking the selection costs ~20 µs a list request; a hit costs the key.
 */
const answers = new WeakMap<FieldNode, Map<string, ReadonlySet<string> | null>>();
/** Bound on the combinations kept per field node (a REST list has one per `select`). */
const MAX_ANSWERS_PER_NODE = 256;

/**
 * The names (not aliases) of the fields the operation selects at `path` below the current field. `null`
 * when the path is not selected at all.
 */
export function selectedFields(info: GraphQLResolveInfo, path: readonly string[]): ReadonlySet<string> | null {
  const node = info.fieldNodes[0];
  if (!node || info.fieldNodes.length > 1) return walk(info, path);
  let byVariables = answers.get(node);
  if (!byVariables) {
    byVariables = new Map();
    answers.set(node, byVariables);
  }
  let key = path.join('.');
  for (const name in info.variableValues) {
    const value = info.variableValues[name];
    if (typeof value === 'boolean') key += value ? `|${name}` : `|!${name}`;
  }
  if (byVariables.has(key)) return byVariables.get(key) ?? null;
  const answer = walk(info, path);
  if (byVariables.size < MAX_ANSWERS_PER_NODE) byVariables.set(key, answer);
  return answer;
}

function walk(info: GraphQLResolveInfo, path: readonly string[]): Set<string> | null {
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

/**
 * How the fields of one object type read the properties of the row it resolves from: a field listed in
 * `fields` reads those properties (none, say, for a constant or a field loaded apart), a field listed in
 * `objects` returns an object that comes with the row, whose own fields read under `prefix` (and its `id`
 * always), and any other field reads its namesake when that is a property.
 */
export interface FieldReads {
  readonly fields: Readonly<Record<string, readonly string[]>>;
  readonly objects?: Readonly<Record<string, { readonly prefix: string; readonly reads: FieldReads }>>;
  readonly isProperty: (name: string) => boolean;
}

/**
 * The row properties the operation's fields at `path` below the current field read, objects that come with
 * the row included: what a statement must read for them. null (the whole row) when a field is not known.
 */
export function selectedProperties(info: GraphQLResolveInfo, path: readonly string[], reads: FieldReads): Set<string> | null {
  const properties = new Set<string>();
  for (const field of selectedFields(info, path) ?? []) {
    const own = reads.fields[field];
    const object = reads.objects?.[field];
    if (own) {
      for (const property of own) properties.add(property);
    } else if (object) {
      const nested = selectedProperties(info, [...path, field], object.reads);
      if (!nested) return null;
      properties.add(`${object.prefix}id`);
      for (const property of nested) properties.add(object.prefix + property);
    } else if (reads.isProperty(field)) {
      properties.add(field);
    } else {
      return null;
    }
  }
  return properties;
}
