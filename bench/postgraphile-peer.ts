// A peer for the benchmark: PostGraphile v5 (Amber preset) in library mode on node:http, over the same
// `bench_…` database as the gateway. Production-like settings: no GraphiQL, no explain, no schema watch, no
// LISTEN client, Grafast in production mode (GRAPHILE_ENV=production, set by the runner). It exposes the
// database's tables as PostGraphile infers them: no authentication, no tenant scoping by credential, no
// query cost or depth limits; the runner's queries scope themselves to a tenant with `condition`.
//
//   DATABASE_URL=postgres://… PORT=4200 GRAPHILE_ENV=production node --import tsx bench/postgraphile-peer.ts
//
// `/readyz` answers 200 once the schema is built; everything else goes to Grafserv (POST /graphql).

import { createServer } from 'node:http';
import { postgraphile } from 'postgraphile';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/node';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is required');
const port = Number(process.env.PORT ?? 4200);
const host = process.env.HOST ?? '127.0.0.1';

const pgl = postgraphile({
  extends: [PostGraphileAmberPreset],
  // Pool of 10, as the gateway's default DATABASE_POOL_SIZE.
  pgServices: [makePgService({ connectionString: url, schemas: ['public'], pubsub: false, poolConfig: { max: 10 } })],
  grafserv: { graphqlPath: '/graphql', graphiql: false, watch: false, websockets: false },
  grafast: { explain: false },
});
const serv = pgl.createServ(grafserv);
// addTo() would also install a WebSocket upgrade handler; the handler alone serves HTTP.
const handle = serv.createHandler();
await pgl.getSchema();

const server = createServer((req, res) => {
  handle(req, res, () => {
    const ready = req.url === '/readyz';
    res.writeHead(ready ? 200 : 404, { 'content-type': 'text/plain' }).end(ready ? 'ok' : 'not found');
  });
});
server.listen(port, host);

const stop = () => {
  server.close();
  server.closeAllConnections();
  void Promise.resolve(serv.release())
    .then(() => pgl.release())
    .finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
