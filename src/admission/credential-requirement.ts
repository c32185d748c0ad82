import { getOperationAST, Kind, type DocumentNode, type FragmentDefinitionNode, type GraphQLError, type SelectionSetNode } from 'graphql';
import type { Context } from '../context.js';
import { credentialRequiredError } from '../errors.js';

/**
 * A request without a credential that asks for any data is refused before execution, with 401, as one with a
 * rejected credential is: a request error, not a field error in an otherwise successful (200) response.
 * Introspection (`__typename`, `__schema`, `__type`) needs no credential: GraphiQL reads the schema before the
 * user has set the header, and the schema is no secret. Null when it may run.
 */
export function credentialRequirementRefusal(
  document: DocumentNode,
  operationName: string | null | undefined,
  viewer: Context['viewer'],
): GraphQLError | null {
  return viewer === null && operationAsksForData(document, operationName) ? credentialRequiredError() : null;
}

/** Whether the operation selects a field other than introspection: without a credential it is refused. */
export function operationAsksForData(document: DocumentNode, operationName: string | null | undefined): boolean {
  const operation = getOperationAST(document, operationName);
  return operation != null && asksForData(operation.selectionSet, fragmentsOf(document), new Set());
}

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  return fragments;
}

/** Whether a root selection holds a field other than introspection, also through fragments. */
function asksForData(selectionSet: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, visited: Set<string>): boolean {
  return selectionSet.selections.some((selection) => {
    if (selection.kind === Kind.FIELD) return !selection.name.value.startsWith('__');
    if (selection.kind === Kind.INLINE_FRAGMENT) return asksForData(selection.selectionSet, fragments, visited);
    const name = selection.name.value;
    const fragment = fragments.get(name);
    if (!fragment || visited.has(name)) return false;
    visited.add(name);
    return asksForData(fragment.selectionSet, fragments, visited);
  });
}
