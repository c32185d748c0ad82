import { ApiError } from '../errors.js';

// Caps on open streams (GraphQL subscriptions over SSE or WebSocket, and REST event streams alike): a
// credential may hold `perCredential` at once and a tenant `perTenant` (one more is 429), the process
// `perProcess` (one more is 503). The tenant cap keeps one tenant with many tokens from holding every stream of
// the process.

export interface StreamLimits {
  perCredential: number;
  perTenant: number;
  perProcess: number;
}

/** Counts held per key, each key at most `max`: the one counter behind every per-credential, per-tenant and per-address cap. */
export class KeyedCounts {
  private readonly held = new Map<string, number>();

  count(key: string): number {
    return this.held.get(key) ?? 0;
  }

  /** Takes one for `key`; returns the function that gives it back (once). */
  take(key: string): () => void {
    this.held.set(key, this.count(key) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.count(key) - 1;
      if (left <= 0) this.held.delete(key);
      else this.held.set(key, left);
    };
  }

  get keys(): number {
    return this.held.size;
  }
}

export class StreamSlots {
  private readonly byCredential = new KeyedCounts();
  private readonly byTenant = new KeyedCounts();
  private open = 0;

  constructor(private readonly limits: StreamLimits) {}

  /** Takes a slot for `credential` of `tenant`, or throws RATE_LIMITED / UNAVAILABLE; returns the function that gives it back. */
  acquire(credential: string, tenant: string): () => void {
    const held = this.byCredential.count(credential);
    if (held >= this.limits.perCredential) {
      throw new ApiError('RATE_LIMITED', `This credential has ${held} open streams, the most it may hold; close one first`, {
        headers: { 'Retry-After': '5' },
      });
    }
    const tenantHeld = this.byTenant.count(tenant);
    if (tenantHeld >= this.limits.perTenant) {
      throw new ApiError(
        'RATE_LIMITED',
        `This tenant has ${tenantHeld} open streams, the most it may hold (STREAMS_PER_TENANT); close one first`,
        {
          headers: { 'Retry-After': '5' },
        },
      );
    }
    if (this.open >= this.limits.perProcess) {
      throw new ApiError('UNAVAILABLE', `This server holds ${this.open} open streams, the most it serves; retry shortly`, {
        headers: { 'Retry-After': '5' },
      });
    }
    const releaseCredential = this.byCredential.take(credential);
    const releaseTenant = this.byTenant.take(tenant);
    this.open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
      releaseCredential();
      releaseTenant();
    };
  }

  stats(): { open: number; credentials: number; tenants: number } {
    return { open: this.open, credentials: this.byCredential.keys, tenants: this.byTenant.keys };
  }
}
