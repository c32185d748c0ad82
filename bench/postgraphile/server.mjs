// The benchmark's peer: PostGraphile 5 (Amber preset, Grafast in production mode) on node:http, over the same
// database as the gateway, scoped to a tenant as its users scope it: a JWT verified on every request names the
// tenant, and PostgreSQL's row-level security keeps the rows of the others out (bench/postgraphile-peer.ts sets
// up the role and the policies). `/readyz` answers once the schema is built.
//
//   DATABASE_URL=postgres://… PORT=4200 JWT_SECRET=… GRAPHILE_ENV=production NODE_ENV=production \
//     node bench/postgraphile/server.mjs

import { createServer } from 'node:http';
import jwt from 'jsonwebtoken';
import { postgraphile } from 'postgraphile';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/node';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';

const secret = process.env.JWT_SECRET;
const pgl = postgraphile({
  extends: [PostGraphileAmberPreset],
  // A pool of 10, as the gateway's default DATABASE_POOL_SIZE.
  pgServices: [makePgService({ connectionString: process.env.DATABASE_URL, schemas: ['public'], pubsub: false, poolConfig: { max: 10 } })],
  grafserv: { graphqlPath: '/graphql', graphiql: false, watch: false, websockets: false },
  grafast: {
    explain: false,
    // Each request's statements run in a transaction as the role bench_peer, with the tenant of the token.
    context(requestContext) {
      const bearer = requestContext.node?.req.headers.authorization?.replace(/^Bearer /, '') ?? '';
      const payload = jwt.verify(bearer, secret, { algorithms: ['HS256'] });
      return { pgSettings: { role: 'bench_peer', 'jwt.claims.tenant_id': String(payload.tenant_id) } };
    },
  },
});
const serv = pgl.createServ(grafserv);
const handle = serv.createHandler();
await pgl.getSchema();

const server = createServer((req, res) => {
  handle(req, res, () => {
    const ready = req.url === '/readyz';
    res.writeHead(ready ? 200 : 404, { 'content-type': 'text/plain' }).end(ready ? 'ok' : 'not found');
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
