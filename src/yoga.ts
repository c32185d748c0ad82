import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { createJwtVerifier } from './auth/jwt.js';
import type { Context } from './context.js';
import type { Database } from './db/client.js';
import type { Config } from './env.js';
import { schema } from './graphql/schema.js';
import type { Logger } from './logger.js';
import { resolveViewer } from './plugins/use-auth.js';
import { useErrorDocs } from './plugins/use-error-docs.js';
import { createMaskError } from './plugins/use-error-masking.js';
import { useHealth } from './plugins/use-health.js';
import { requestIdOf, useRequestId } from './plugins/use-request-id.js';
import { useRequestLog } from './plugins/use-request-log.js';
import { useRest } from './plugins/use-rest.js';

export interface GatewayOptions {
  db: Database;
  config: Pick<Config, 'JWT_SECRET' | 'JWT_PUBLIC_KEY' | 'JWT_JWKS_URL' | 'JWT_ISSUER' | 'JWT_AUDIENCE'>;
  logger: Logger;
}

export type Gateway = YogaServerInstance<Record<string, unknown>, Context>;

/** The whole HTTP surface: GraphQL at /graphql and the plugins every request passes through. */
export function createGateway({ db, config, logger }: GatewayOptions): Gateway {
  const jwt = createJwtVerifier(config);
  return createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    graphiql: {
      title: 'Integrations & Sync API',
      defaultQuery: `# Set the Authorization header below (Headers tab), e.g. {"Authorization": "Token igw_pat_…"}
query Connections {
  connections(limit: 5) {
    totalCount
    nodes {
      name
      status
      application { name category { name } }
      syncs(limit: 3) { status startedAt finishedAt errorMessage }
    }
  }
}
`,
    },
    logging: {
      debug: (...args) => logger.debug(args.map(String).join(' ')),
      info: (...args) => logger.info(args.map(String).join(' ')),
      warn: (...args) => logger.warn(args.map(String).join(' ')),
      error: (...args) => logger.error(args.map(String).join(' ')),
    },
    maskedErrors: { maskError: createMaskError(logger) },
    plugins: [useRequestId(), useRequestLog({ logger }), useHealth({ db }), useErrorDocs(), useRest({ schema })],
    context: async ({ request }) => ({
      db,
      requestId: requestIdOf(request),
      viewer: await resolveViewer(request, { db, jwt }),
    }),
  });
}
