import type { DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { CompiledExecution } from '../graphql/compiled-execution.js';

/**
 * Runs queries with their compiled form (src/graphql/compiled-execution.ts) once there is one. First in the
 * plugin list, so every later plugin's execute wrapper (the deadline's) wraps the compiled executor. `trusted`:
 * the server's own documents (the REST routes'), compiled at their first run.
 */
export function useCompiledExecution({ compiled, trusted }: { compiled: CompiledExecution; trusted: ReadonlySet<DocumentNode> }): Plugin {
  return {
    onExecute({ args, setExecuteFn }) {
      const executor = compiled.executorFor(args.document, args.operationName, trusted.has(args.document));
      if (executor) setExecuteFn(executor as never);
    },
  };
}
