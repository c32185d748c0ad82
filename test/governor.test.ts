// The governor's rules as pure logic (its behaviour through a real server is test/resource-table.test.ts): the
// caps and their refusals, max-min fairness when full, the queue's turns between keys, and the one release path.
import { describe, expect, it } from 'vitest';
import type { ApiError } from '../src/errors.js';
import { Governor } from '../src/governor/governor.js';

const codeOf = (run: () => unknown): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    return (error as ApiError).code;
  }
};

describe('the governor', () => {
  it('refuses past the credential and tenant caps (429) and past the process (503), and a release gives one back', () => {
    const governor = new Governor({ stream: { perCredential: 2, perTenant: 3, perProcess: 5 } });
    const a1 = governor.lease('stream', { tenant: 'a', credential: 'a1' }, null);
    governor.lease('stream', { tenant: 'a', credential: 'a1' }, null);
    expect(codeOf(() => governor.lease('stream', { tenant: 'a', credential: 'a1' }, null))).toBe('RATE_LIMITED');
    governor.lease('stream', { tenant: 'a', credential: 'a2' }, null);
    expect(codeOf(() => governor.lease('stream', { tenant: 'a', credential: 'a3' }, null))).toBe('RATE_LIMITED');
    governor.lease('stream', { tenant: 'b', credential: 'b1' }, null);
    governor.lease('stream', { tenant: 'b', credential: 'b2' }, null);
    // Full, and b holds only one fewer than a: no lease is taken back.
    expect(codeOf(() => governor.lease('stream', { tenant: 'b', credential: 'b3' }, null))).toBe('UNAVAILABLE');
    a1.end('done');
    a1.end('client-gone');
    expect(governor.stats('stream')).toMatchObject({ held: 4, ended: { done: 1, 'client-gone': 0 } });
    governor.close();
  });

  it('takes the youngest lease of the largest holder back for a tenant holding at least two fewer', () => {
    const governor = new Governor({ stream: { perCredential: 10, perTenant: 10, perProcess: 3 } });
    const leases = [1, 2, 3].map((n) => governor.lease('stream', { tenant: 'a', credential: `a${n}` }, null));
    const ends: string[] = [];
    for (const lease of leases) lease.onEnd((reason) => ends.push(`${lease.holder.credential}:${reason}`));
    governor.lease('stream', { tenant: 'c', credential: 'c1' }, null);
    expect(ends).toEqual(['a3:taken-for-fairness']);
    expect(governor.stats('stream')).toMatchObject({ held: 3, tenants: 2 });
    governor.close();
  });

  it('ends every lease of an owner whose client leaves, through the one release path', async () => {
    const governor = new Governor();
    const client = new AbortController();
    const owner = governor.owner('request', client.signal);
    const lease = governor.lease('stream', { tenant: 'a', credential: 'a1' }, owner);
    client.abort();
    expect(lease.endedBy).toBe('client-gone');
    expect(governor.stats('stream').held).toBe(0);
    governor.close();
  });

  it('serves queued keys in turn, and a waiter whose client leaves gives its place up', async () => {
    const governor = new Governor({ 'password-hash': { perTenant: 1, perProcess: 1, queuePerKey: 4, queueTotal: 8, queueWaitMs: 1000 } });
    const first = await governor.leaseInTurn('password-hash', { tenant: 'flood' });
    const order: string[] = [];
    /** A lease in turn for `key`, its grant noted in `order` as `name`. */
    const inTurn = async (key: string, name: string) => {
      const lease = await governor.leaseInTurn('password-hash', { tenant: key });
      order.push(name);
      return lease;
    };
    const flood = [1, 2, 3].map((n) => inTurn('flood', `flood${n}`));
    const leaving = new AbortController();
    const gone = governor.leaseInTurn('password-hash', { tenant: 'gone' }, null, leaving.signal);
    const other = inTurn('other', 'other');
    expect(codeOf(() => governor.lease('password-hash', { tenant: 'x' }, null))).toBe('UNAVAILABLE');
    leaving.abort();
    await expect(gone).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(governor.stats('password-hash').waiting).toBe(4);
    first.end('done');
    (await flood[0]!).end('done');
    (await other).end('done');
    (await flood[1]!).end('done');
    (await flood[2]!).end('done');
    // The other key is served after one of the flood's, not after all of them.
    expect(order).toEqual(['flood1', 'other', 'flood2', 'flood3']);
    // One more than the key may have waiting is refused at once; the others wait their second and are refused.
    const asked = [1, 2, 3, 4, 5, 6].map(() => governor.leaseInTurn('password-hash', { tenant: 'flood' }));
    const codes = (await Promise.allSettled(asked)).map((outcome) =>
      outcome.status === 'fulfilled' ? 'granted' : (outcome.reason as ApiError).code,
    );
    expect(codes).toEqual(['granted', 'UNAVAILABLE', 'UNAVAILABLE', 'UNAVAILABLE', 'UNAVAILABLE', 'RATE_LIMITED']);
    governor.close();
  });
});
