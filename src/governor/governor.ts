import { ApiError } from '../errors.js';

// The governor: what a request holds once it is admitted, leased from one place. The admission spine
// (http/admission.ts) decides whether a request may start; the governor decides what it may keep while it runs,
// for whom, how much, and when it gives it back. docs/reference/limits.md lists each resource and its defaults;
// docs/explanation/governor.md says why it is built this way.
//
// - A resource (RESOURCES) is counted per credential, per tenant and per process.
// - A lease is taken for an owner: the transport's connection (an HTTP response, a WebSocket) or a job of the
//   server's own. Every lease ends through `Lease.end`, once, whatever the way out; an owner's end ends all of
//   its leases, and an owner ends when its client leaves, when it stalls, or at shutdown.
// - Shares are fair between tenants (max-min): a tenant that holds fewer than its share of a full resource takes
//   one from the tenant that holds the most (`whenFull: 'take-from-largest'`: the lease taken ends with a
//   retryable answer), or the resource keeps room for one more tenant (`whenFull: 'keep-room'`), or a request
//   waits in a queue served one key after another (`queue`).
// - An owner that keeps a full queue for its stall time is ended, with the transport's retryable ending.

/** Why a lease ended: counted in /metrics by resource. */
export const END_REASONS = [
  'done',
  'client-gone',
  'stalled',
  'fell-behind',
  'error',
  'revoked',
  'taken-for-fairness',
  'shutdown',
  'outlived',
] as const;
export type EndReason = (typeof END_REASONS)[number];

/** How a resource is shared when it is full. */
export type WhenFull = 'take-from-largest' | 'keep-room' | 'queue';

export interface ResourceLimits {
  /** Leases one credential may hold at once (429); undefined: no credential cap. */
  perCredential?: number | undefined;
  /** Leases one tenant may hold at once (429). */
  perTenant: number;
  /** Leases the process holds at once (503 when the fair rule gives none). */
  perProcess: number;
  whenFull: WhenFull;
  /** `queue` only: requests that may wait per key, and in all. */
  queuePerKey?: number;
  queueTotal?: number;
  /** `queue` only: how long a request waits for its turn before 503. */
  queueWaitMs?: number;
}

/**
 * The resources the governor leases, and their defaults (docs/reference/limits.md). A new resource is declared
 * here and gets its rows in test/resource-table.test.ts, which fails until every abuse has a bound for it.
 */
export const RESOURCES = {
  /** An open stream: a GraphQL subscription (SSE or WebSocket) or a REST event stream. */
  stream: { perCredential: 20, perTenant: 200, perProcess: 2000, whenFull: 'take-from-largest' },
  /** An export (NDJSON or CSV): a connection of the exports' pool for as long as it streams. */
  export: { perCredential: 2, perTenant: 3, perProcess: 8, whenFull: 'take-from-largest' },
  /** A webhook endpoint being sent to by this process's delivery worker. */
  'webhook-delivery': { perTenant: 8, perProcess: 8, whenFull: 'keep-room' },
  /** A password hashed or verified (argon2id, 19 MiB and tens of milliseconds each), keyed by client address. */
  'password-hash': { perTenant: 2, perProcess: 2, whenFull: 'queue', queuePerKey: 4, queueTotal: 64, queueWaitMs: 5000 },
} as const satisfies Record<string, ResourceLimits>;
export type ResourceName = keyof typeof RESOURCES;
export const RESOURCE_NAMES = Object.keys(RESOURCES) as ResourceName[];

/**
 * What a lease may hold, in bytes, whatever the size of the rows or events (one event or row larger than a bound
 * still goes through, alone).
 */
export const BYTE_BOUNDS = {
  /**
   * What a graphql-ws socket buffers for its client before its next message waits. (An SSE body queues nothing of
   * its own, rest/event-stream-body.ts: what waits for its client is the socket's buffer, whose bound is the same.)
   */
  streamQueue: 64 * 1024,
  /**
   * Events a subscription holds that its transport has not taken; past it, the stream fell behind. Larger than
   * a page of the log, which the event hub hands to every subscriber at once.
   */
  streamPending: 1024 * 1024,
  /** Events read from the log at once, by a replay or by the event hub. */
  logPage: 256 * 1024,
  /** An export's bytes written and not yet taken by its client: past it, its reads pause. */
  exportQueue: 1024 * 1024,
} as const;

/** How long an owner may keep a full queue unread before it is ended (STALL_MS). */
export const DEFAULT_STALL_MS = 10_000;
/** How often stalls and owners that left are looked for: a slot is back within this of a client leaving unseen. */
const SWEEP_MS = 500;

/** Who holds a lease: the tenant (or, for password hashes, the client address) and the credential. */
export interface Holder {
  tenant: string;
  credential?: string | undefined;
}

/** The holder of a credential's lease: its tenant, and its token (or for a JWT or session, its subject). */
export function holderOf(viewer: { tenantId: string; tokenId?: string | undefined; credential?: string; subject?: string }): Holder {
  return { tenant: viewer.tenantId, credential: viewer.tokenId ?? `${viewer.credential}:${viewer.tenantId}:${viewer.subject}` };
}

/** Called when the governor ends an owner (stall, shutdown): the transport sends its retryable ending (endingMessage). */
export type Ending = (reason: EndReason) => void;

/**
 * The transport's side of a request that holds leases: its client, and the bytes queued for that client. It ends
 * when the client leaves (`signal`), when it stalls (`waiting` for longer than `stallMs`), or when the governor
 * ends it; its leases end with it.
 */
export class LeaseOwner {
  private readonly controller = new AbortController();
  private readonly leases = new Set<Lease>();
  private readonly endings: Ending[] = [];
  /** Since when the owner's queue has been full and its client has taken nothing; undefined while it takes. */
  waitingSince: number | undefined;
  endedBy: EndReason | undefined;

  constructor(
    readonly label: string,
    readonly stallMs: number,
    client?: AbortSignal,
  ) {
    if (client?.aborted) queueMicrotask(() => this.end('client-gone'));
    else client?.addEventListener('abort', () => this.end('client-gone'), { once: true });
  }

  /** Aborted when the owner ends, however: the transport's and its subscription's cue to stop. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The owner's queue is full: its client has the stall time to take something. */
  waiting(): void {
    this.waitingSince ??= performance.now();
  }

  /** The client took something (or the queue has room again). */
  taking(): void {
    this.waitingSince = undefined;
  }

  /** What to send the client when the governor ends the owner (stall, fairness, shutdown). */
  onEnding(ending: Ending): void {
    this.endings.push(ending);
  }

  /** Ends the owner and every lease it holds (once); an end the client did not ask for is told to it first. */
  end(reason: EndReason): void {
    if (this.endedBy) return;
    this.endedBy = reason;
    if (reason !== 'done' && reason !== 'client-gone') for (const ending of this.endings) ending(reason);
    for (const lease of [...this.leases]) lease.end(reason);
    this.controller.abort(reason);
  }

  get ended(): boolean {
    return this.endedBy !== undefined;
  }

  /** @internal */
  hold(lease: Lease): void {
    this.leases.add(lease);
  }

  /** @internal */
  drop(lease: Lease): void {
    this.leases.delete(lease);
  }
}

/** One unit of a resource, held by an owner for a holder; given back by `end`, once. */
export class Lease {
  endedBy: EndReason | undefined;
  readonly since = performance.now();
  private readonly onEnds: ((reason: EndReason) => void)[] = [];

  constructor(
    private readonly governor: Governor,
    readonly resource: ResourceName,
    readonly holder: Holder,
    readonly owner: LeaseOwner | null,
  ) {}

  /** Called once when the lease ends, whoever ends it. */
  onEnd(callback: (reason: EndReason) => void): void {
    if (this.endedBy) callback(this.endedBy);
    else this.onEnds.push(callback);
  }

  /** The one release path: counts given back, the owner told, the holder's callbacks run. */
  end(reason: EndReason = 'done'): void {
    if (this.endedBy) return;
    this.endedBy = reason;
    this.owner?.drop(this);
    this.governor.release(this, reason);
    for (const callback of this.onEnds.splice(0)) callback(reason);
  }

  get ended(): boolean {
    return this.endedBy !== undefined;
  }
}

/** Counts held per key, a key at zero forgotten: the one counter behind every per-credential, per-tenant and per-address cap. */
export class KeyedCounts {
  private readonly held = new Map<string, number>();

  count(key: string): number {
    return this.held.get(key) ?? 0;
  }

  add(key: string, by: 1 | -1): void {
    const left = this.count(key) + by;
    if (left <= 0) this.held.delete(key);
    else this.held.set(key, left);
  }

  /** Takes one for `key`; returns the function that gives it back (once). */
  take(key: string): () => void {
    this.add(key, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.add(key, -1);
    };
  }

  get keys(): number {
    return this.held.size;
  }

  entries(): IterableIterator<[string, number]> {
    return this.held.entries();
  }
}

/** A request waiting for its turn at a queued resource. */
interface Waiter {
  holder: Holder;
  owner: LeaseOwner | null;
  grant: (lease: Lease) => void;
  refuse: (error: ApiError) => void;
  timer: NodeJS.Timeout;
}

class ResourceState {
  readonly leases = new Set<Lease>();
  readonly byTenant = new KeyedCounts();
  readonly byCredential = new KeyedCounts();
  /** Waiters by key (the holder's tenant), served one key after another in `order`. */
  readonly queues = new Map<string, Waiter[]>();
  readonly order: string[] = [];
  waiting = 0;
  readonly ended = new Map<EndReason, number>();
  refused = 0;

  constructor(readonly limits: ResourceLimits) {}
}

export interface ResourceStats {
  held: number;
  tenants: number;
  waiting: number;
  refused: number;
  ended: Record<EndReason, number>;
}

export type GovernorLimits = { [name in ResourceName]?: Partial<ResourceLimits> };

/** The largest share of `capacity` that `holders` tenants may each hold at once (max-min fairness): at least 1. */
export function fairShare(capacity: number, holders: number): number {
  return Math.max(1, Math.floor(capacity / Math.max(1, holders)));
}

export class Governor {
  private readonly resources: Record<ResourceName, ResourceState>;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  /** The owner of each request that leased something: its client, its queue. */
  private readonly ownersOfRequests = new WeakMap<object, LeaseOwner>();

  constructor(
    limits: GovernorLimits = {},
    /** How long an owner may keep a full queue unread (STALL_MS). */
    readonly stallMs = DEFAULT_STALL_MS,
  ) {
    this.resources = Object.fromEntries(
      RESOURCE_NAMES.map((name) => [name, new ResourceState({ ...RESOURCES[name], ...withoutUndefined(limits[name] ?? {}) })]),
    ) as Record<ResourceName, ResourceState>;
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  limits(resource: ResourceName): Readonly<ResourceLimits> {
    return this.resources[resource].limits;
  }

  /** An owner for a transport's connection (a WebSocket); `client` aborts when its client leaves. */
  owner(label: string, client?: AbortSignal): LeaseOwner {
    const owner = new LeaseOwner(label, this.stallMs, client);
    if (this.closed) queueMicrotask(() => owner.end('shutdown'));
    return owner;
  }

  /**
   * The owner of an HTTP request (made at the first call, ending when the client leaves: `request.signal`), or
   * the owner `adopt` gave it: every part of one request (its subscription, its stream writer) finds the same.
   */
  ownerOf(request: Request | undefined): LeaseOwner {
    if (!request) return this.owner('in-process');
    let owner = this.ownersOfRequests.get(request);
    if (!owner) {
      owner = this.owner('request', request.signal);
      this.ownersOfRequests.set(request, owner);
    }
    return owner;
  }

  /** Makes `owner` the owner of `request` (the requests a WebSocket's operations run as are its socket's). */
  adopt(request: Request, owner: LeaseOwner): void {
    this.ownersOfRequests.set(request, owner);
  }

  /**
   * A lease of `resource` now, or RATE_LIMITED (the credential's or the tenant's cap) / UNAVAILABLE (the process's,
   * when the fair rule gives this tenant none), with Retry-After.
   */
  lease(resource: ResourceName, holder: Holder, owner: LeaseOwner | null): Lease {
    const state = this.resources[resource];
    const refusal = this.refusal(resource, state, holder);
    if (refusal) {
      state.refused++;
      throw refusal;
    }
    return this.grant(resource, state, holder, owner);
  }

  /**
   * A lease of a queued resource (`whenFull: 'queue'`): at once when one is free, else when this key's turn comes
   * (keys are served one after another, so one key's many requests do not delay another's one). Refused at once
   * when the key's or the whole queue is full, and after `queueWaitMs` of waiting. A request whose `client`
   * leaves while it waits gives its place up (once granted, the lease is held until the work ends).
   */
  async leaseInTurn(resource: ResourceName, holder: Holder, owner: LeaseOwner | null = null, client?: AbortSignal): Promise<Lease> {
    const state = this.resources[resource];
    const { limits } = state;
    if (state.leases.size < limits.perProcess && state.byTenant.count(holder.tenant) < limits.perTenant && state.waiting === 0) {
      return this.grant(resource, state, holder, owner);
    }
    const queue = state.queues.get(holder.tenant) ?? [];
    if (queue.length >= (limits.queuePerKey ?? 0)) {
      state.refused++;
      throw busy('RATE_LIMITED', `Too many requests of this kind from this client are waiting; retry shortly`);
    }
    if (state.waiting >= (limits.queueTotal ?? 0)) {
      state.refused++;
      throw busy('UNAVAILABLE', 'The server is busy with requests of this kind; retry shortly');
    }
    return new Promise<Lease>((resolve, reject) => {
      const waiter: Waiter = {
        holder,
        owner,
        grant: resolve,
        refuse: reject,
        timer: setTimeout(() => {
          if (!this.unqueue(state, waiter)) return;
          state.refused++;
          reject(busy('UNAVAILABLE', 'The server is busy with requests of this kind; retry shortly'));
        }, limits.queueWaitMs ?? 0),
      };
      if (queue.length === 0) {
        state.queues.set(holder.tenant, queue);
        state.order.push(holder.tenant);
      }
      queue.push(waiter);
      state.waiting++;
      const leave = () => {
        if (this.unqueue(state, waiter)) reject(busy('UNAVAILABLE', 'The request ended while it waited'));
      };
      owner?.signal.addEventListener('abort', leave);
      client?.addEventListener('abort', leave, { once: true });
    });
  }

  /**
   * Runs `work` holding a lease of a queued resource, and gives it back however `work` ends; a `client` that
   * leaves while it waits gives its place up.
   */
  async inTurn<T>(resource: ResourceName, holder: Holder, work: () => Promise<T>, client?: AbortSignal): Promise<T> {
    const lease = await this.leaseInTurn(resource, holder, null, client);
    try {
      return await work();
    } finally {
      lease.end('done');
    }
  }

  /** How many leases `tenant` may hold of a `keep-room` resource now: its fair share with room kept for one more tenant. */
  shareOf(resource: ResourceName, tenant: string): number {
    const state = this.resources[resource];
    const holders = state.byTenant.keys + (state.byTenant.count(tenant) > 0 ? 0 : 1);
    return Math.min(state.limits.perTenant, fairShare(state.limits.perProcess, holders + 1));
  }

  /** Whether `tenant` may take one more lease of `resource` now, by every cap and its fair share. */
  mayLease(resource: ResourceName, holder: Holder): boolean {
    return this.refusal(resource, this.resources[resource], holder) === null;
  }

  stats(resource: ResourceName): ResourceStats {
    const state = this.resources[resource];
    const ended = Object.fromEntries(END_REASONS.map((reason) => [reason, state.ended.get(reason) ?? 0])) as Record<EndReason, number>;
    return { held: state.leases.size, tenants: state.byTenant.keys, waiting: state.waiting, refused: state.refused, ended };
  }

  /** Ends every owner and lease (shutdown): each transport sends its retryable ending. */
  close(): void {
    this.closed = true;
    for (const state of Object.values(this.resources)) {
      for (const lease of [...state.leases]) {
        if (lease.owner) lease.owner.end('shutdown');
        else lease.end('shutdown');
      }
    }
    clearInterval(this.sweeper);
  }

  /** @internal Counts given back; the next waiter in turn, if any, takes the freed lease. */
  release(lease: Lease, reason: EndReason): void {
    const state = this.resources[lease.resource];
    if (!state.leases.delete(lease)) return;
    state.byTenant.add(lease.holder.tenant, -1);
    if (lease.holder.credential !== undefined) state.byCredential.add(lease.holder.credential, -1);
    state.ended.set(reason, (state.ended.get(reason) ?? 0) + 1);
    if (state.waiting > 0) this.serveQueue(lease.resource, state);
  }

  private refusal(resource: ResourceName, state: ResourceState, holder: Holder): ApiError | null {
    const { limits } = state;
    const noun = resource === 'stream' ? 'open streams' : resource === 'export' ? 'exports under way' : `${resource} leases`;
    if (limits.perCredential !== undefined && holder.credential !== undefined) {
      const held = state.byCredential.count(holder.credential);
      if (held >= limits.perCredential)
        return busy('RATE_LIMITED', `This credential has ${held} ${noun}, the most it may hold; end one first`);
    }
    const tenantHeld = state.byTenant.count(holder.tenant);
    if (tenantHeld >= limits.perTenant)
      return busy('RATE_LIMITED', `This tenant has ${tenantHeld} ${noun}, the most it may hold; end one first`);
    if (limits.whenFull === 'keep-room' && tenantHeld >= this.shareOf(resource, holder.tenant)) {
      return busy('RATE_LIMITED', `This tenant holds its fair share of ${noun}; retry shortly`);
    }
    if (state.leases.size < limits.perProcess) return null;
    if (limits.whenFull === 'take-from-largest' && this.takeFromLargest(state, holder.tenant)) return null;
    return busy('UNAVAILABLE', `This server holds ${state.leases.size} ${noun}, the most it serves; retry shortly`);
  }

  /**
   * Max-min fairness on a full resource: when `tenant` holds at least two fewer than the tenant holding the most,
   * that tenant's youngest lease ends (its transport answers with a retryable ending) and `tenant` takes its place.
   */
  private takeFromLargest(state: ResourceState, tenant: string): boolean {
    let largest: string | undefined;
    let most = 0;
    for (const [key, count] of state.byTenant.entries()) {
      if (count > most) {
        most = count;
        largest = key;
      }
    }
    if (largest === undefined || largest === tenant || most - state.byTenant.count(tenant) < 2) return false;
    let youngest: Lease | undefined;
    for (const lease of state.leases) if (lease.holder.tenant === largest && (!youngest || lease.since > youngest.since)) youngest = lease;
    if (!youngest) return false;
    youngest.end('taken-for-fairness');
    return true;
  }

  private grant(resource: ResourceName, state: ResourceState, holder: Holder, owner: LeaseOwner | null): Lease {
    const lease = new Lease(this, resource, holder, owner);
    state.leases.add(lease);
    state.byTenant.add(holder.tenant, 1);
    if (holder.credential !== undefined) state.byCredential.add(holder.credential, 1);
    if (owner) {
      if (owner.ended) queueMicrotask(() => lease.end(owner.endedBy));
      else owner.hold(lease);
    }
    return lease;
  }

  /** Grants freed leases to waiters, one key after another. */
  private serveQueue(resource: ResourceName, state: ResourceState): void {
    const { limits } = state;
    let passes = state.order.length;
    while (state.waiting > 0 && state.leases.size < limits.perProcess && passes-- > 0) {
      const key = state.order.shift()!;
      const queue = state.queues.get(key);
      if (!queue || queue.length === 0) {
        state.queues.delete(key);
        continue;
      }
      if (state.byTenant.count(key) >= limits.perTenant) {
        state.order.push(key);
        continue;
      }
      const waiter = queue.shift()!;
      state.waiting--;
      clearTimeout(waiter.timer);
      if (queue.length > 0) state.order.push(key);
      else state.queues.delete(key);
      passes = state.order.length;
      waiter.grant(this.grant(resource, state, waiter.holder, waiter.owner));
    }
  }

  private unqueue(state: ResourceState, waiter: Waiter): boolean {
    const queue = state.queues.get(waiter.holder.tenant);
    const index = queue?.indexOf(waiter) ?? -1;
    if (!queue || index < 0) return false;
    queue.splice(index, 1);
    state.waiting--;
    clearTimeout(waiter.timer);
    if (queue.length === 0) {
      state.queues.delete(waiter.holder.tenant);
      state.order.splice(state.order.indexOf(waiter.holder.tenant), 1);
    }
    return true;
  }

  /** Owners whose queue stayed full past their stall time are ended; a lease whose owner ended unseen is counted and ended. */
  private sweep(): void {
    const now = performance.now();
    for (const state of Object.values(this.resources)) {
      for (const lease of [...state.leases]) {
        const { owner } = lease;
        if (!owner) continue;
        if (owner.ended) lease.end('outlived');
        else if (owner.waitingSince !== undefined && now - owner.waitingSince >= owner.stallMs) {
          owner.end('stalled');
        }
      }
    }
  }
}

/**
 * What a client is told when the governor ends its lease, each reason retryable (UNAVAILABLE); `resume` names
 * where to resume from (` with Last-Event-ID 7`).
 */
export function endingMessage(reason: EndReason, stallMs = DEFAULT_STALL_MS, resume = ''): string {
  switch (reason) {
    case 'stalled':
      return `The stream fell behind: its client took nothing for ${stallMs / 1000} s; reconnect${resume} to resume`;
    case 'fell-behind':
      return `The stream fell more than ${BYTE_BOUNDS.streamPending / 1024} KiB of events behind its client; reconnect${resume} to resume`;
    case 'taken-for-fairness':
      return `The server is full and this tenant holds more than its share of it; reconnect${resume} to resume`;
    case 'shutdown':
      return `The server is shutting down; reconnect${resume} to resume`;
    default:
      return `The stream ended; reconnect${resume} to resume`;
  }
}

function busy(code: 'RATE_LIMITED' | 'UNAVAILABLE', message: string): ApiError {
  return new ApiError(code, message, { headers: { 'Retry-After': '5' } });
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, member]) => member !== undefined)) as Partial<T>;
}
