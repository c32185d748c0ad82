import { normalizedExecutor } from '@graphql-tools/executor';
import type { ExecutionArgs, ExecutionResult, GraphQLError, GraphQLSchema } from 'graphql';
import type { Context } from '../context.js';
import type { CompiledExecution } from '../graphql/compiled-execution.js';
import type { Logger } from '../logger.js';
import type { Admission } from './admission.js';
import { executeWithinDeadline, type Deadline } from '../admission/deadline.js';
import type { OperationSurface } from '../plugins/use-metrics.js';

// What the two direct paths (REST in ./direct-rest.ts, GraphQL in ./direct-graphql.ts) share: their options, and
// running an operation as yoga's pipeline runs it around its executor.

/** What both direct paths take of the gateway: the schema, the spine and the context's request-free part. */
export interface DirectPathOptions {
  schema: GraphQLSchema;
  logger: Logger;
  /** The admission spine's functions (./admission.ts): every check these paths make is one of them. */
  admission: Admission;
  maxBodyBytes: number;
  /** The compiled queries (the REST documents are compiled at their first run). */
  compiledExecution: CompiledExecution;
  /** The context's fields that do not depend on the request. */
  contextBase: Pick<Context, 'db' | 'webhooks' | 'applicationCategory' | 'tokenCaps' | 'live' | 'identityProviders'>;
}

/**
 * Runs an operation as the pipeline would around its executor: compiled when it is (the server's own REST
 * documents at their first run), within the deadline, counted in the metrics under `surface`, its errors masked.
 * `refusal`: a limit refused it already; that is its result.
 */
export async function executeDirectly(
  options: DirectPathOptions,
  deadline: Deadline,
  args: Omit<ExecutionArgs, 'schema'>,
  surface: OperationSurface,
  refusal: GraphQLError | null = null,
): Promise<ExecutionResult> {
  const { admission } = options;
  const done = admission.operationStarted(args.document, args.operationName, surface);
  let result: ExecutionResult;
  if (refusal) {
    result = { errors: [refusal] };
  } else {
    const compiled = options.compiledExecution.executorFor(args.document, args.operationName, surface === 'rest');
    const executor = (compiled ?? normalizedExecutor) as typeof normalizedExecutor;
    result = (await executeWithinDeadline(
      deadline,
      executor,
      { schema: options.schema, ...args },
      { usesSignal: compiled === null },
    )) as ExecutionResult;
  }
  const masked = result.errors ? { ...result, errors: result.errors.map(admission.mask) } : result;
  done(masked);
  return masked;
}
