import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../src/admission/error-masking.js';

describe('isDatabaseUnavailable', () => {
  it('recognizes what pg, its pool and Prisma adapters say when the server is gone', () => {
    for (const error of [
      new Error('Client has encountered a connection error and is not queryable'),
      new Error('Client was closed and is not queryable'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      Object.assign(new Error('the database system is shutting down'), { code: '57P03' }),
      Object.assign(new Error('x'), { cause: { kind: 'DatabaseNotReachable' } }),
      Object.assign(new Error('x'), { cause: { kind: 'ConnectionClosed' } }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    ]) {
      expect(isDatabaseUnavailable(error), error.message).toBe(true);
    }
  });

  it('leaves other failures alone', () => {
    for (const error of [
      new Error('relation "syncs" does not exist'),
      Object.assign(new Error('duplicate key'), { code: '23505' }),
      new TypeError('Cannot read properties of undefined'),
    ]) {
      expect(isDatabaseUnavailable(error), error.message).toBe(false);
    }
  });
});
