import { timingSafeEqual } from 'node:crypto';
import { getOperationAST, type DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerGovernorMetrics } from './governor-metrics.js';
import { registerReadReplicaMetrics } from './read-replica-metrics.js';
import type { Database, PoolStats } from '../db/client.js';
import type { Live } from '../live/live.js';
import { ApiError } from '../errors.js';
import {
  API_PREFIX,
  ASSETS_PATH,
  LOGOS_PATH,
  DOCS_PATH,
  ERROR_DOCS_PATH,
  GRAPHQL_ENDPOINT,
  HEALTH_PATH,
  METRICS_PATH,
  OAUTH_METADATA_PATH,
  OAUTH_ROUTES,
  OPENID_CONFIGURATION_PATH,
  OPENAPI_PATH,
  READY_PATH,
  withoutTrailingSlash,
} from '../paths.js';
import { pathPatternOf } from '../rest/compile-routes.js';
import { routes } from '../rest/routes.js';
import { signInPaths } from '../rest/sign-in-openapi.js';
import { earlyErrorResponse } from './error-response.js';
import { socketAddressOf } from '../admission/rate-limits.js';

/**
 * The REST routes' paths, and the sign-in endpoints' (rest/sign-in-openapi.ts), with the patterns they are
 * matched by; literal paths before templated ones, so `/syncs/claim` is its own route and not `/syncs/{id}`.
 */
const REST_ROUTES = [...new Set([...routes.map((route) => route.path), ...Object.keys(signInPaths())])]
  .map((path) => ({ path, pattern: pathPatternOf(path), templated: path.split('{').length - 1 }))
  .sort((a, b) => a.templated - b.templated);

const FIXED_ROUTES = new Set([
  '/',
  GRAPHQL_ENDPOINT,
  HEALTH_PATH,
  READY_PATH,
  METRICS_PATH,
  OPENAPI_PATH,
  DOCS_PATH,
  ERROR_DOCS_PATH,
  ...Object.values(OAUTH_ROUTES),
  OPENID_CONFIGURATION_PATH,
  OAUTH_METADATA_PATH,
]);

/**
 * The route a path belongs to, as a pattern (`/api/v1/integrations/connected/{id}`), for metric labels and
 * log lines: raw paths carry ids, which would make every request its own time series.
 */
export function routeOf(pathname: string): string {
  const path = withoutTrailingSlash(pathname);
  if (FIXED_ROUTES.has(path)) return path;
  if (path.startsWith(`${API_PREFIX}/`)) {
    const rest = REST_ROUTES.find((route) => route.pattern.test(path));
    if (rest) return rest.path;
    if (path.startsWith(`${DOCS_PATH}/`)) return `${DOCS_PATH}/{asset}`;
  }
  if (path.startsWith(`${ERROR_DOCS_PATH}/`)) return `${ERROR_DOCS_PATH}/{code}`;
  if (path.startsWith(`${ASSETS_PATH}/`)) return `${ASSETS_PATH}/{file}`;
  if (path.startsWith(`${LOGOS_PATH}/`)) return `${LOGOS_PATH}/{file}`;
  return 'unmatched';
}

/** `WS`: one graphql-ws operation (src/http/graphql-ws.ts), counted as a request of its own. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'WS']);
/** The operation names of the documents the server runs itself: the only operation names that become labels. */
const SERVER_OPERATION_NAMES: ReadonlySet<string> = new Set(
  [...routes.map((route) => route.document), ...routes.flatMap((route) => (route.stream ? [route.stream.document] : []))].flatMap(
    (document) =>
      document.definitions.flatMap((definition) =>
        'name' in definition && definition.kind === 'OperationDefinition' && definition.name ? [definition.name.value] : [],
      ),
  ),
);

let processRegistry: Registry | undefined;

/** Process metrics are the process's, not a gateway's: collected once, however many gateways it builds. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    const before = process.cpuUsage();
    collectDefaultMetrics({ register: processRegistry });
    // prom-client counts CPU from the moment its collector is registered (the first scrape, here); the CPU the
    // process used before that is added, so the counters count since the process started, as their names say.
    const add = (name: string, micros: number) => (processRegistry?.getSingleMetric(name) as Counter | undefined)?.inc(micros / 1e6);
    add('process_cpu_user_seconds_total', before.user);
    add('process_cpu_system_seconds_total', before.system);
    add('process_cpu_seconds_total', before.user + before.system);
  }
  return processRegistry;
}

/** Which surface an operation came from: a GraphQL request, or a REST route running its operation. */
export type OperationSurface = 'graphql' | 'rest';

/**
 * The gateway's Prometheus metrics: requests by route and status, GraphQL operations by name, the PostgreSQL
 * pool, and the process. One per gateway; the admission spine (src/http/admission.ts) records every surface's
 * requests and operations into the same series.
 */
export class GatewayMetrics {
  private readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [this.registry],
  });
  private readonly operations = new Counter({
    name: 'graphql_operations_total',
    help: 'GraphQL operations executed, by operation name and type, surface (graphql or rest) and outcome',
    labelNames: ['operation_name', 'operation_type', 'surface', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly rowWriterFallbacks = new Counter({
    name: 'rest_row_writer_fallbacks_total',
    help: 'REST list pages whose items the row writer left to execution, by route pattern and reason',
    labelNames: ['route', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly operationDuration = new Histogram({
    name: 'graphql_operation_duration_seconds',
    help: 'GraphQL execution time by operation name and type',
    labelNames: ['operation_name', 'operation_type', 'surface'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [this.registry],
  });
  /**
   * The label sets seen so far, each with its series: prom-client hashes a label object on every call, and a
   * series taken once (`labels()`) is counted without that. Bounded by routes × methods × statuses, and by
   * the server's own operation names for operations.
   */
  private readonly requestSeries = new Map<string, { count: Counter.Internal; duration: Histogram.Internal<string> }>();
  private readonly operationSeries = new Map<
    string,
    { ok: Counter.Internal; error: Counter.Internal; duration: Histogram.Internal<string> }
  >();

  constructor({ db, live }: { db: Database; live?: Pick<Live, 'governor' | 'hub'> | undefined }) {
    const poolGauge = (name: string, help: string, stats: () => PoolStats) =>
      new Gauge({
        name,
        help,
        labelNames: ['state'] as const,
        registers: [this.registry],
        collect() {
          const { total, idle, waiting, max } = stats();
          this.set({ state: 'total' }, total);
          this.set({ state: 'idle' }, idle);
          this.set({ state: 'waiting' }, waiting);
          this.set({ state: 'max' }, max);
        },
      });
    if (db.poolStats) {
      poolGauge(
        'db_pool_connections',
        'PostgreSQL pool: open (total), idle and maximum connections, and queries waiting for one',
        db.poolStats.bind(db),
      );
    }
    if (db.livePoolStats) {
      poolGauge(
        'db_live_pool_connections',
        "PostgreSQL pool of live delivery's reads of the event log: open (total), idle and maximum connections, and reads waiting for one",
        db.livePoolStats.bind(db),
      );
    }
    if (db.readReplicas) registerReadReplicaMetrics(this.registry, db, db.readReplicas);
    if (live) {
      new Gauge({
        name: 'live_open_streams',
        help: 'Open streams (GraphQL subscriptions over SSE or WebSocket, REST event streams), and the tenants the event hub follows',
        labelNames: ['kind'] as const,
        registers: [this.registry],
        collect() {
          this.set({ kind: 'streams' }, live.governor.stats('stream').held);
          this.set({ kind: 'followed_tenants' }, live.hub.stats().tenants);
        },
      });
      registerGovernorMetrics(this.registry, live.governor);
    }
  }

  /**
   * A request answered, on its route pattern (routeOf): `startedAt` is its performance.now() on arrival
   * (undefined: counted without a duration).
   */
  requestDone(method: string, route: string, status: number, startedAt: number | undefined): void {
    const methodLabel = METHODS.has(method) ? method : 'OTHER';
    const key = `${methodLabel} ${route} ${status}`;
    let series = this.requestSeries.get(key);
    if (!series) {
      const labels = { method: methodLabel, route, status: String(status) };
      series = { count: this.requests.labels(labels), duration: this.requestDuration.labels(labels) };
      this.requestSeries.set(key, series);
    }
    series.count.inc();
    if (startedAt !== undefined) series.duration.observe((performance.now() - startedAt) / 1000);
  }

  /** A REST list page left to execution by its row writer (src/rest/row-writer.ts), on its route pattern. */
  rowWriterFellBack(route: string, reason: string): void {
    this.rowWriterFallbacks.inc({ route, reason });
  }

  /** An operation starts; the returned function records its outcome once it has a result. */
  operationStarted(document: DocumentNode, operationName: string | null | undefined, surface: OperationSurface): (result: unknown) => void {
    const operation = getOperationAST(document, operationName);
    const name = this.operationLabel(operation?.name?.value);
    const type = operation?.operation ?? 'unknown';
    const key = `${name} ${type} ${surface}`;
    let series = this.operationSeries.get(key);
    if (!series) {
      const labels = { operation_name: name, operation_type: type, surface };
      series = {
        ok: this.operations.labels({ ...labels, outcome: 'ok' }),
        error: this.operations.labels({ ...labels, outcome: 'error' }),
        duration: this.operationDuration.labels(labels),
      };
      this.operationSeries.set(key, series);
    }
    const start = performance.now();
    const taken = series;
    return (result) => {
      const errors = (result as { errors?: unknown[] }).errors;
      (errors?.length ? taken.error : taken.ok).inc();
      taken.duration.observe((performance.now() - start) / 1000);
    };
  }

  /** The exposition text: the process's metrics, then the gateway's. */
  async text(): Promise<{ text: string; contentType: string }> {
    return { text: `${await processMetrics().metrics()}\n${await this.registry.metrics()}`, contentType: this.registry.contentType };
  }

  /**
   * Operation names come from clients, so only the server's own (the REST routes' operations) are labels; any
   * other name is `other`: a tenant can neither fill the label set nor show its names to whoever reads /metrics.
   */
  private operationLabel(name: string | undefined): string {
    if (!name) return 'anonymous';
    return SERVER_OPERATION_NAMES.has(name) ? name : 'other';
  }
}

/**
 * Serves GET /metrics (the admission spine records every request and operation). With `token`, /metrics needs
 * `Authorization: Bearer <token>`; without one, only a client on this machine gets it (a loopback peer, not
 * through a proxy): it shows traffic, which is no one else's to read.
 */
export function useMetricsEndpoint({ metrics, token }: { metrics: GatewayMetrics; token?: string | undefined }): Plugin {
  return {
    async onRequest({ request, url, serverContext, endResponse, fetchAPI }) {
      if (url.pathname !== METRICS_PATH) return;
      if (!token && !isLocalClient(request, serverContext)) {
        endResponse(
          earlyErrorResponse(
            request,
            new ApiError('UNAUTHORIZED', 'The metrics are served to this machine only; set METRICS_TOKEN to scrape them from elsewhere', {
              status: 403,
            }),
            fetchAPI,
          ),
        );
        return;
      }
      if (token && !bearerMatches(request.headers.get('authorization'), token)) {
        endResponse(
          earlyErrorResponse(
            request,
            new ApiError('UNAUTHORIZED', 'The metrics need Authorization: Bearer <METRICS_TOKEN>', {
              headers: { 'WWW-Authenticate': 'Bearer' },
            }),
            fetchAPI,
          ),
        );
        return;
      }
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        endResponse(
          earlyErrorResponse(
            request,
            new ApiError('METHOD_NOT_ALLOWED', `${request.method.slice(0, 20)} is not allowed on ${METRICS_PATH}`, {
              headers: { Allow: 'GET' },
            }),
            fetchAPI,
          ),
        );
        return;
      }
      const { text, contentType } = await metrics.text();
      endResponse(new fetchAPI.Response(text, { headers: { 'content-type': contentType } }));
    },
  };
}

/**
 * A request from this machine: its socket's peer is a loopback address, and no proxy forwarded it (a proxy on
 * this machine would make every client look local). A request with no socket was made in process.
 */
function isLocalClient(request: Request, serverContext: unknown): boolean {
  if (request.headers.has('x-forwarded-for') || request.headers.has('forwarded')) return false;
  const address = socketAddressOf(serverContext);
  return address === undefined || address === '::1' || /^(?:::ffff:)?127\./.test(address);
}

function bearerMatches(header: string | null, token: string): boolean {
  const presented = Buffer.from(header?.startsWith('Bearer ') ? header.slice(7) : '');
  const expected = Buffer.from(token);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}
