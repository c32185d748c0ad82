import {
  getNamedType,
  getNullableType,
  GraphQLEnumType,
  type GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  typeFromAST,
  validate,
  type DocumentNode,
  type FieldNode,
  type GraphQLField,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { pageBoundsOf } from '../query/page-bounds.js';
import type { FieldSpec, FieldType, ResourceSpec } from './query-params.js';
import type { RouteSpec } from './routes.js';
import { compileRowWriter, type RowWriter } from './row-writer.js';

// Turns the route table into what a request needs, once at start: the validated operation, a path matcher,
// and the item's fields read from the document's selection and the schema. A document that does not fit
// the conventions (one root field, aliases as REST names, @include(if: $with_<name>) on list fields) stops
// the start rather than failing a request later.
//
// The documents and the schema are both fixed when the program is built, so validating the one against the other
// tells a start of the built program nothing its tests have not: every gateway the suite starts from the sources
// validates them all. The built program (NODE_ENV production) skips it, some 50 ms of every start.
const VALIDATE_DOCUMENTS = process.env.NODE_ENV !== 'production';

/** The errors of a REST document against the schema, where the program validates them (VALIDATE_DOCUMENTS). */
export function documentErrors(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] {
  return VALIDATE_DOCUMENTS ? validate(schema, document) : [];
}

/** A JSON Schema (2020-12) object, as OpenAPI 3.1 embeds it. */
export type JsonSchema = Record<string, unknown>;

export interface RestField {
  /** REST name: the alias in the document. */
  name: string;
  /** The GraphQL field it reads. */
  graphqlField: string;
  /** That field's definition in the schema (its type, resolver, and the property it exposes, if any). */
  definition: GraphQLField<unknown, unknown>;
  spec: FieldSpec;
  /** The member of the operation's filter input this field is filtered with, when it can be. */
  filterKey: string | null;
  /** The order enum value this field sorts by, when it can be sorted. */
  orderValue: string | null;
  description: string | null;
}

export interface CompiledRoute {
  spec: RouteSpec;
  operation: OperationDefinitionNode;
  /** Response key of the operation's one root field. */
  rootKey: string;
  pathPattern: RegExp;
  pathParams: string[];
  fields: RestField[];
  /** What the query-string grammar accepts; lists only. */
  resource: ResourceSpec | null;
  /** JSON Schema of one data item. */
  itemSchema: JsonSchema;
  /** The permission the root field needs (its auth scope), when it names one. */
  permission: string | null;
  /** A list's items written from its rows (./row-writer.ts); null where they are executed. */
  rowWriter: RowWriter | null;
}

export function compileRoutes(schema: GraphQLSchema, routes: readonly RouteSpec[]): CompiledRoute[] {
  const compiled = routes.map((route) => compileRoute(schema, route));
  const seen = new Set<string>();
  for (const route of compiled) {
    const key = `${route.spec.method} ${route.spec.path}`;
    if (seen.has(key)) throw new Error(`REST route ${key} is declared twice`);
    seen.add(key);
  }
  return compiled;
}

function compileRoute(schema: GraphQLSchema, route: RouteSpec): CompiledRoute {
  const fail = (message: string): never => {
    throw new Error(`REST route ${route.method} ${route.path} (${route.operationId}): ${message}`);
  };
  const errors = documentErrors(schema, route.document);
  if (errors.length > 0) fail(`invalid operation document: ${errors.map((e) => e.message).join('; ')}`);
  const operations = route.document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const operation = operations[0];
  if (operations.length !== 1 || !operation) return fail('the document must hold exactly one operation');
  if ((operation.operation === 'mutation') !== (route.method !== 'GET')) {
    fail(`${route.method} must run a ${route.method === 'GET' ? 'query' : 'mutation'}`);
  }
  if ((route.body !== undefined) !== (route.method === 'POST' || route.method === 'PATCH')) {
    fail('POST and PATCH routes, and only they, take a body');
  }
  const rootType = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
  const fragments = new Map(
    route.document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((d) => [d.name.value, d]),
  );
  // Analysis reads the selection with fragments inlined; the document executed is the one validated above.
  const rootFields = fieldNodes(inlineFragments(operation.selectionSet, fragments));
  const rootField = rootFields[0];
  if (!rootType || rootFields.length !== 1 || !rootField) return fail('the operation must select exactly one root field');
  const rootDef = rootType.getFields()[rootField.name.value];
  if (!rootDef) return fail(`unknown root field ${rootField.name.value}`);

  const variables = new Map(operation.variableDefinitions?.map((v) => [v.variable.name.value, v]) ?? []);
  const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? '');
  for (const param of pathParams) {
    if (!variables.has(param)) fail(`path parameter {${param}} has no $${param} variable`);
  }

  let itemType = getNamedType(rootDef.type);
  let itemSelection = rootField.selectionSet;
  const isList = route.response.kind === 'list';
  if (isList) {
    const nodes = fieldNodes(rootField.selectionSet).find((f) => f.name.value === 'nodes');
    const total = fieldNodes(rootField.selectionSet).find((f) => f.name.value === 'totalCount');
    const offset = fieldNodes(rootField.selectionSet).find((f) => f.name.value === 'offset');
    const pageInfo = fieldNodes(rootField.selectionSet).find((f) => f.name.value === 'pageInfo');
    const pageInfoFields = new Set(fieldNodes(pageInfo?.selectionSet).map((f) => f.name.value));
    if (
      !nodes ||
      !total ||
      !offset ||
      !pageInfo ||
      nodes.alias ||
      total.alias ||
      offset.alias ||
      pageInfo.alias ||
      !isObjectType(itemType)
    ) {
      return fail('a list operation selects `totalCount`, `offset`, `pageInfo { hasNextPage endCursor }` and `nodes { … }` of a list type');
    }
    if (!pageInfoFields.has('hasNextPage') || !pageInfoFields.has('endCursor'))
      fail('a list operation selects `pageInfo { hasNextPage endCursor }`');
    const nodesDef = itemType.getFields().nodes;
    if (!nodesDef) return fail('the list type has no nodes');
    itemType = getNamedType(nodesDef.type);
    itemSelection = nodes.selectionSet;
  }
  if (!isObjectType(itemType) || !itemSelection) return fail('the item must be an object type with a selection');

  const filterInput = isList ? inputTypeOf(schema, variables.get('filter')?.type) : null;
  const orderEnum = isList ? orderEnumOf(schema, variables.get('orderBy')?.type) : null;
  if (isList) {
    for (const name of ['filter', 'search', 'orderBy', 'limit', 'offset', 'after']) {
      if (!variables.has(name)) fail(`a list operation declares $${name}`);
    }
    if (!filterInput || !orderEnum) fail('$filter must be an input object and $orderBy a list of {field: Enum} inputs');
  }

  const fields = fieldNodes(itemSelection).map((node) => {
    const name = node.alias?.value ?? node.name.value;
    const def = (itemType as GraphQLObjectType).getFields()[node.name.value];
    if (!def) return fail(`unknown field ${node.name.value}`);
    if (isList && includeVariable(node) !== `with_${name}`) {
      fail(`list field ${name} must carry @include(if: $with_${name})`);
    }
    if (isList && !variables.has(`with_${name}`)) fail(`$with_${name} is not declared`);
    const spec = fieldSpecOf(def.type);
    const filterKey = filterInput?.getFields()[node.name.value] ? node.name.value : null;
    if (filterKey && filterInput) spec.parseValue = filterValueParser(filterInput, filterKey, spec, fail);
    const orderValue = orderEnum?.getValue(node.name.value) ? node.name.value : null;
    spec.filterable = filterKey !== null;
    spec.sortable = orderValue !== null;
    return { name, graphqlField: node.name.value, definition: def, spec, filterKey, orderValue, description: def.description ?? null };
  });

  let resource: ResourceSpec | null = null;
  if (route.response.kind === 'list') {
    const { list } = route.response;
    for (const [param, { variable }] of Object.entries(list.params)) {
      if (!variables.has(variable)) fail(`parameter ${param} sets $${variable}, which is not declared`);
    }
    // Page sizes and how far one may page: the GraphQL field's, read off its `limit` argument.
    const bounds = pageBoundsOf(rootDef);
    if (!bounds) return fail(`${rootField.name.value} does not declare its page bounds (pageArgs)`);
    resource = {
      fields: Object.fromEntries(fields.map((f) => [f.name, f.spec])),
      reserved: Object.keys(list.params),
      ...bounds,
    };
  }

  const scopes = (rootDef.extensions as { pothosOptions?: { authScopes?: { permission?: unknown } } }).pothosOptions?.authScopes;
  return {
    spec: route,
    permission: typeof scopes?.permission === 'string' ? scopes.permission : null,
    operation,
    rootKey: rootField.alias?.value ?? rootField.name.value,
    pathPattern: pathPatternOf(route.path),
    pathParams,
    fields,
    resource,
    itemSchema: objectSchema(itemType, itemSelection, new Set(route.omitNullMembers ?? [])),
    rowWriter: isList ? compileRowWriter(itemType, itemSelection, operation) : null,
  };
}

/** The selection with every named fragment spread replaced by the fragment's fields, recursively. */
function inlineFragments(selectionSet: SelectionSetNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>): SelectionSetNode {
  const selections = selectionSet.selections.flatMap((selection): FieldNode[] => {
    if (selection.kind === Kind.FIELD) {
      return [selection.selectionSet ? { ...selection, selectionSet: inlineFragments(selection.selectionSet, fragments) } : selection];
    }
    const fragment = selection.kind === Kind.FRAGMENT_SPREAD ? fragments.get(selection.name.value) : undefined;
    if (!fragment || selection.directives?.length) {
      throw new Error('REST operations select fields and named fragments without directives only');
    }
    return fieldNodes(inlineFragments(fragment.selectionSet, fragments));
  });
  return { ...selectionSet, selections };
}

/** The fields of a selection that inlineFragments has flattened. */
function fieldNodes(selectionSet: SelectionSetNode | undefined): FieldNode[] {
  if (!selectionSet) return [];
  return selectionSet.selections.map((selection) => {
    if (selection.kind !== Kind.FIELD) throw new Error('fragments must be inlined before reading fields');
    return selection;
  });
}

/** The variable named by a field's `@include(if: $…)`, if it has one. */
function includeVariable(node: FieldNode): string | null {
  const include = node.directives?.find((d) => d.name.value === 'include');
  const condition = include?.arguments?.find((a) => a.name.value === 'if')?.value;
  return condition?.kind === Kind.VARIABLE ? condition.name.value : null;
}

function inputTypeOf(schema: GraphQLSchema, typeNode: Parameters<typeof typeFromAST>[1] | undefined) {
  if (!typeNode) return null;
  const type = getNamedType(typeFromAST(schema, typeNode));
  return isInputObjectType(type) ? type : null;
}

function orderEnumOf(schema: GraphQLSchema, typeNode: Parameters<typeof typeFromAST>[1] | undefined): GraphQLEnumType | null {
  const order = inputTypeOf(schema, typeNode);
  const field = order?.getFields().field;
  const type = field ? getNamedType(field.type) : null;
  return type && isEnumType(type) ? type : null;
}

const SCALAR_FIELD_TYPES: Record<string, FieldType> = {
  ID: 'string',
  String: 'string',
  Int: 'int',
  Boolean: 'boolean',
  DateTime: 'timestamp',
  JSONObject: 'json',
};

function fieldSpecOf(type: GraphQLOutputType): FieldSpec {
  const nullable = !isNonNullType(type);
  const inner = getNullableType(type);
  if (isListType(inner)) return { type: getNamedType(inner).name === 'String' ? 'string_array' : 'json', nullable };
  if (isObjectType(inner)) return { type: 'json', nullable };
  if (isEnumType(inner)) return { type: 'enum', enumValues: inner.getValues().map((v) => v.name), nullable };
  const scalar = SCALAR_FIELD_TYPES[(inner as GraphQLScalarType).name];
  if (!scalar) throw new Error(`no REST field type for GraphQL type ${String(inner)}`);
  return { type: scalar, nullable };
}

const FILTER_INPUT_FOR: Partial<Record<FieldType, string>> = {
  string: 'StringFilter',
  timestamp: 'DateTimeFilter',
  boolean: 'BooleanFilter',
};

/**
 * The filter input member must take the operators the grammar allows for the field's type; its `eq` type
 * (a scalar or an enum) then coerces the REST values of the field, as it coerces GraphQL's.
 */
function filterValueParser(
  filter: GraphQLInputObjectType,
  key: string,
  spec: FieldSpec,
  fail: (message: string) => never,
): FieldSpec['parseValue'] {
  const member = getNamedType(filter.getFields()[key]?.type);
  if (!isInputObjectType(member)) return fail(`filter member ${key} is not an input object`);
  const expected = FILTER_INPUT_FOR[spec.type];
  if (expected && member.name !== expected) fail(`filter member ${key} is ${member.name}; a ${spec.type} field needs ${expected}`);
  const eq = member.getFields().eq;
  const type = eq ? getNamedType(eq.type) : null;
  if (!expected && (spec.type !== 'enum' || !type || !isEnumType(type))) fail(`filter member ${key} does not fit a ${spec.type} field`);
  if (!type || !(isEnumType(type) || type instanceof GraphQLScalarType)) return fail(`filter member ${key} has no eq value type`);
  return (input) => type.parseValue(input);
}

export function pathPatternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) => (/^\{\w+\}$/.test(segment) ? '([^/]+)' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

// ---- JSON Schema of the response item, from the selection and the schema's types ----

function objectSchema(type: GraphQLObjectType, selectionSet: SelectionSetNode, omitNullMembers: ReadonlySet<string>): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const node of fieldNodes(selectionSet)) {
    const key = node.alias?.value ?? node.name.value;
    const def = type.getFields()[node.name.value];
    if (!def) throw new Error(`unknown field ${type.name}.${node.name.value}`);
    const schema = typeSchema(def.type, node.selectionSet, omitNullMembers.has(key));
    properties[key] = def.description ? { description: def.description, ...schema } : schema;
    required.push(key);
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

/** With `membersOmittedWhenNull`, an object's nullable members are optional and never null. */
function typeSchema(type: GraphQLOutputType, selectionSet: SelectionSetNode | undefined, membersOmittedWhenNull = false): JsonSchema {
  if (type instanceof GraphQLNonNull) return nonNullSchema(type.ofType, selectionSet, membersOmittedWhenNull);
  const schema = nonNullSchema(type, selectionSet, membersOmittedWhenNull);
  return { ...schema, type: [schema.type as string, 'null'] };
}

function nonNullSchema(type: GraphQLOutputType, selectionSet: SelectionSetNode | undefined, membersOmittedWhenNull: boolean): JsonSchema {
  if (type instanceof GraphQLList) return { type: 'array', items: typeSchema(type.ofType, selectionSet) };
  if (type instanceof GraphQLObjectType) {
    if (!selectionSet) throw new Error(`object field of type ${type.name} without a selection`);
    const schema = objectSchema(type, selectionSet, new Set());
    if (!membersOmittedWhenNull) return schema;
    const properties = Object.fromEntries(
      Object.entries(schema.properties as Record<string, JsonSchema>).map(([key, member]) => [key, stripNull(member)]),
    );
    return { type: 'object', properties, additionalProperties: false };
  }
  if (type instanceof GraphQLEnumType) return { type: 'string', enum: type.getValues().map((v) => v.name) };
  if (type instanceof GraphQLScalarType) {
    switch (type.name) {
      case 'Int':
        return { type: 'integer' };
      case 'Float':
        return { type: 'number' };
      case 'Boolean':
        return { type: 'boolean' };
      case 'DateTime':
        return { type: 'string', format: 'date-time' };
      case 'JSONObject':
        // Open: any members (a generated client reads them as unknown, not as an object that has none).
        return { type: 'object', additionalProperties: true };
      default:
        return { type: 'string' };
    }
  }
  throw new Error(`no JSON Schema for GraphQL type ${String(type)}`);
}

function stripNull(schema: JsonSchema): JsonSchema {
  const type = schema.type;
  if (!Array.isArray(type)) return schema;
  const rest = type.filter((t) => t !== 'null');
  return { ...schema, type: rest.length === 1 ? rest[0] : rest };
}
