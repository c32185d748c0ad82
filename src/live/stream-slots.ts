import { ApiError } from '../errors.js';

// Caps on open streams (GraphQL subscriptions over SSE or WebSocket, and REST event streams alike): a
// credential may hold `perCredential` at once (one more is 429), the process `perProcess` (one more is 503).

export interface StreamLimits {
  perCredential: number;
  perProcess: number;
}

export class StreamSlots {
  private readonly byCredential = new Map<string, number>();
  private open = 0;

  constructor(private readonly limits: StreamLimits) {}

  /** Takes a slot for `credential`, or throws RATE_LIMITED / UNAVAILABLE; returns the function that gives it back. */
  acquire(credential: string): () => void {
    const held = this.byCredential.get(credential) ?? 0;
    if (held >= this.limits.perCredential) {
      throw new ApiError('RATE_LIMITED', `This credential has ${held} open streams, the most it may hold; close one first`, {
        headers: { 'Retry-After': '5' },
      });
    }
    if (this.open >= this.limits.perProcess) {
      throw new ApiError('UNAVAILABLE', `This server holds ${this.open} open streams, the most it serves; retry shortly`, {
        headers: { 'Retry-After': '5' },
      });
    }
    this.byCredential.set(credential, held + 1);
    this.open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
      const left = (this.byCredential.get(credential) ?? 1) - 1;
      if (left === 0) this.byCredential.delete(credential);
      else this.byCredential.set(credential, left);
    };
  }

  stats(): { open: number; credentials: number } {
    return { open: this.open, credentials: this.byCredential.size };
  }
}
