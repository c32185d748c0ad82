import { Client, cacheExchange, fetchExchange, subscriptionExchange, CombinedError } from 'urql';
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';

// How the console talks to the gateway: GraphQL over HTTP for queries and mutations, graphql-ws for
// subscriptions, both on /graphql of the same origin, and the few REST routes of signing in and out.
// A person signed in with a password is known by the session cookie (sent by the browser itself); a person
// who signed in with an API token keeps it in this tab's sessionStorage and sends it in Authorization.
// Every request carries X-Requested-With: the server accepts a cookie-authenticated write only with it.

const TOKEN_KEY = 'console.token';
/**
 * Set while this browser holds a member's session cookie (which scripts cannot see, being HttpOnly): it is no
 * credential, only what saves a request that would fail when nobody signed in.
 */
const SESSION_MARK_KEY = 'console.session';

export function hasSessionMark(): boolean {
  return localStorage.getItem(SESSION_MARK_KEY) === '1';
}

export function setSessionMark(signedIn: boolean): void {
  if (signedIn) localStorage.setItem(SESSION_MARK_KEY, '1');
  else localStorage.removeItem(SESSION_MARK_KEY);
}

/** Whether this tab has a credential to try: a token, or (presumably) a session cookie. */
export function hasCredential(): boolean {
  return storedToken() !== null || hasSessionMark();
}

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

function authorization(): string | null {
  const token = storedToken();
  return token ? `Token ${token}` : null;
}

export function requestHeaders(): Record<string, string> {
  const value = authorization();
  return { 'X-Requested-With': 'console', ...(value ? { Authorization: value } : {}) };
}

let wsClient: WsClient | null = null;

function subscriptions(): WsClient {
  wsClient ??= createWsClient({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
    lazy: true,
    connectionParams: () => {
      const value = authorization();
      return value ? { Authorization: value } : {};
    },
  });
  return wsClient;
}

export function createApiClient(): Client {
  return new Client({
    url: '/graphql',
    preferGetMethod: false,
    requestPolicy: 'cache-and-network',
    fetchOptions: () => ({ credentials: 'same-origin', headers: requestHeaders() }),
    exchanges: [
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => {
          const input = { ...request, query: request.query ?? '' };
          return {
            subscribe: (sink) => ({ unsubscribe: subscriptions().subscribe(input, sink) }),
          };
        },
      }),
    ],
  });
}

/** Closes the subscription socket: after signing out, or when the credential changes. */
export function closeSubscriptions(): void {
  wsClient?.dispose();
  wsClient = null;
}

/**
 * The API's error message (the spec's error body on REST, the GraphQL errors' messages), for a person: each problem
 * of a refused input as a sentence naming the member (not the raw `invalid input: input.url: …`), and every message
 * in the console's own case, a capital first and a full stop last.
 */
export function errorText(error: CombinedError | Error | string | null | undefined): string | null {
  if (!error) return null;
  if (typeof error === 'string') return asSentence(error);
  if (error instanceof CombinedError) {
    if (error.graphQLErrors.length > 0) return error.graphQLErrors.map(graphqlErrorText).join(' ');
    return error.networkError ? 'The server could not be reached.' : asSentence(error.message);
  }
  return asSentence(error.message);
}

function graphqlErrorText(error: { message: string; extensions?: Record<string, unknown> }): string {
  const details = error.extensions?.details;
  if (!Array.isArray(details) || details.length === 0) return asSentence(error.message);
  return details
    .map((detail: { field?: unknown; parameter?: unknown; message?: unknown }) => {
      const path = String(detail.field ?? detail.parameter ?? '');
      const member =
        path
          .split('.')
          .filter((part) => part !== 'input' && !/^\d+$/.test(part))
          .pop() ?? '';
      const name = member
        .replace(/([a-z])([A-Z])/g, '$1 $2')
        .replace(/_/g, ' ')
        .toLowerCase();
      return asSentence(name ? `the ${name} ${String(detail.message)}` : String(detail.message));
    })
    .join(' ');
}

/** `the password is too short` → `The password is too short.` */
export function asSentence(text: string): string {
  const trimmed = text.trim();
  if (trimmed === '') return trimmed;
  const capital = trimmed[0]!.toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** Whether the error says the request carried no valid credential (401, not a 403 for a missing permission). */
export function isUnauthenticated(error: CombinedError | undefined): boolean {
  if (!error) return false;
  if ((error.response as Response | undefined)?.status === 401) return true;
  return error.graphQLErrors.some((e) => (e.extensions?.http as { status?: number } | undefined)?.status === 401);
}

/** An error answer of the REST API: its message, and the code and details of its error body. */
export class ApiAnswerError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly details: readonly { parameter: string; message: string }[],
  ) {
    super(message);
  }
}

interface ApiAnswer {
  msg?: string;
  error?: { code?: string; details?: { parameter: string; message: string }[] };
}

/** The REST answer's error body as an ApiAnswerError (the spec's body, or only the status when there is none). */
function answerError(status: number, answer: ApiAnswer): ApiAnswerError {
  const message = asSentence(answer.msg || `The server answered ${status}`);
  return new ApiAnswerError(message, answer.error?.code, answer.error?.details ?? []);
}

/** POST a JSON body to a REST route of this server; resolves to the parsed answer, throws its message. */
export function postJson(path: string, body: unknown): Promise<unknown> {
  return requestJson(path, { method: 'POST', body: JSON.stringify(body) });
}

/** GET a REST route of this server; resolves to the parsed answer, throws its message. */
export function getJson(path: string): Promise<unknown> {
  return requestJson(path, { method: 'GET' });
}

async function requestJson(path: string, init: { method: 'GET' | 'POST'; body?: string }): Promise<unknown> {
  const response = await fetch(path, {
    ...init,
    credentials: 'same-origin',
    headers: {
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      accept: 'application/json',
      'X-Requested-With': 'console',
    },
  });
  const text = await response.text();
  const parsed = text ? (JSON.parse(text) as ApiAnswer) : {};
  if (!response.ok) throw answerError(response.status, parsed);
  return parsed;
}

/** The formats a REST list exports in (docs/reference/full-history.md), by the media type asked for in Accept. */
export const EXPORT_FORMATS = {
  csv: { label: 'CSV', accept: 'text/csv' },
  ndjson: { label: 'NDJSON', accept: 'application/x-ndjson' },
} as const;
export type ExportFormat = keyof typeof EXPORT_FORMATS;

/**
 * Saves a REST list's export (every row its query matches) as the file `name`.<format>. It is fetched with this
 * tab's credential, the session cookie or the token in Authorization (which no link could carry, and which never
 * goes into a URL), then handed to the browser as a download. An error answer, or a transfer cut short, throws.
 */
export async function downloadExport(path: string, query: URLSearchParams, format: ExportFormat, name: string): Promise<void> {
  const response = await fetch(`${path}?${query.toString()}`, {
    credentials: 'same-origin',
    headers: { ...requestHeaders(), accept: EXPORT_FORMATS[format].accept },
  });
  if (!response.ok) {
    const text = await response.text();
    let answer: ApiAnswer = {};
    try {
      answer = JSON.parse(text) as ApiAnswer;
    } catch {
      // Not the spec's error body (a proxy's page): the status says enough.
    }
    throw answerError(response.status, answer);
  }
  const file = URL.createObjectURL(await response.blob());
  const link = document.createElement('a');
  link.href = file;
  link.download = `${name}.${format}`;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has read the file by the time a minute has passed; until then the address must stay valid.
  setTimeout(() => URL.revokeObjectURL(file), 60_000);
}
