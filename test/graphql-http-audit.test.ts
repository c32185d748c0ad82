import { auditServer } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.js';
import { createGateway, type Gateway } from '../src/yoga.js';
import { createTestDatabase, type TestDatabase } from './fixtures/databases.js';

describe('GraphQL over HTTP (graphql-http audit suite)', () => {
  let db: TestDatabase;
  let gateway: Gateway;
  beforeAll(async () => {
    db = await createTestDatabase('pglite');
    gateway = createGateway({
      db,
      config: { JWT_SECRET: undefined, JWT_PUBLIC_KEY: undefined, JWT_JWKS_URL: undefined, JWT_ISSUER: undefined, JWT_AUDIENCE: undefined },
      logger: createLogger('silent'),
    });
  });
  afterAll(() => db?.dispose());

  it('passes every MUST audit', async () => {
    const results = await auditServer({
      url: 'http://gateway.test/graphql',
      fetchFn: (input: string, init?: RequestInit) => gateway.fetch(new URL(input), init ?? {}),
    });
    const failedMusts = results.filter((result) => result.status !== 'ok' && result.name.startsWith('MUST'));
    expect(failedMusts.map((result) => `${result.name}: ${'reason' in result ? result.reason : ''}`)).toEqual([]);
    expect(results.filter((result) => result.name.startsWith('MUST')).length).toBeGreaterThan(10);
  });
});
