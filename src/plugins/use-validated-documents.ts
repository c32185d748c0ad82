import type { DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** How many client documents are remembered (yoga's parse and validation caches keep 1,000 too). */
const MAX_DOCUMENTS = 1000;

/**
 * Client documents that yoga's pipeline parsed and found valid under every rule (the limits' depth, alias and
 * directive rules among them), by their text, as yoga's caches keep them. The direct GraphQL path
 * (src/http/direct-graphql.ts) answers only documents found here: whatever a document's parse or validation would
 * refuse, yoga refuses, on its first request and on every one after.
 */
export class ValidatedDocuments {
  private readonly byText = new Map<string, DocumentNode>();

  get(text: string): DocumentNode | undefined {
    return this.byText.get(text);
  }

  remember(text: string, document: DocumentNode): void {
    if (this.byText.has(text)) return;
    if (this.byText.size >= MAX_DOCUMENTS) this.byText.delete(this.byText.keys().next().value!);
    this.byText.set(text, document);
  }
}

/** Records each document that passes validation in `store`, under the text it was parsed from. */
export function useValidatedDocuments(store: ValidatedDocuments): Plugin {
  const texts = new WeakMap<DocumentNode, string>();
  return {
    onParse({ params }) {
      const text = typeof params.source === 'string' ? params.source : params.source.body;
      return ({ result }) => {
        if (result !== null && typeof result === 'object' && !(result instanceof Error)) texts.set(result, text);
      };
    },
    onValidate({ params }) {
      return ({ valid }) => {
        const text = valid ? texts.get(params.documentAST) : undefined;
        if (text !== undefined) store.remember(text, params.documentAST);
      };
    },
  };
}
