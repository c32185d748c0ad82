import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import { assertLiteralAllowed, guardedLookup, type GuardOptions, urlProblem } from '../domain/ssrf-guard.js';

// One webhook attempt: a POST of the message, signed with Standard Webhooks (webhook-id, webhook-timestamp,
// webhook-signature: v1,<base64 HMAC-SHA256>), with a 10 s limit for the whole exchange, no redirect followed
// (a 3xx is a failed attempt), the SSRF guard on the address connected to, and at most the first 1 KB of the
// answer kept.

const ATTEMPT_TIMEOUT_MS = 10_000;
const RESPONSE_BODY_LIMIT = 1024;

interface WebhookMessage {
  /** The Standard Webhooks message id: the delivery's id, the same on every attempt. */
  id: string;
  url: string;
  secret: string;
  body: string;
}

interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  /** The first 1 KB of the answer (UTF-8, cut on a character boundary). */
  responseBody: string;
  /** Why there was no 2xx answer, for the log: a timeout, a refused connection, the SSRF guard, a redirect… */
  error: string | null;
  /** No answer within the time limit (the worker backs such an endpoint off). */
  timedOut: boolean;
}

export interface SendOptions extends GuardOptions {
  timeoutMs?: number;
  userAgent?: string;
  /** Cancels the attempt (the worker gives its slot to another tenant): it ends at once, failed, and not timed out. */
  signal?: AbortSignal | undefined;
}

/** The headers of one signed attempt (the signature covers id, timestamp and body). */
function signedHeaders(message: WebhookMessage, timestamp: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': message.id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(message.secret).sign(message.id, timestamp, message.body),
  };
}

function firstKilobyte(response: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      response.removeAllListeners('data');
      const text = new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT));
      // A character cut at the limit decodes as U+FFFD: drop it.
      resolve(size > RESPONSE_BODY_LIMIT ? text.replace(/\uFFFD$/, '') : text);
    };
    response.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_BODY_LIMIT) {
        done();
        response.destroy();
      }
    });
    response.on('end', done);
    response.on('error', done);
    response.on('close', done);
  });
}

export async function sendWebhook(message: WebhookMessage, options: SendOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const failed = (error: string, statusCode: number | null = null, responseBody = '', timedOut = false): AttemptOutcome => ({
    ok: false,
    statusCode,
    latencyMs: elapsed(),
    responseBody,
    error,
    timedOut,
  });
  const problem = urlProblem(message.url, options);
  if (problem) return failed(`url ${problem}`);
  const url = new URL(message.url);
  try {
    assertLiteralAllowed(url, options);
  } catch (error) {
    return failed((error as Error).message);
  }
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const timeout = AbortSignal.timeout(options.timeoutMs ?? ATTEMPT_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const body = Buffer.from(message.body);
  return new Promise<AttemptOutcome>((resolve) => {
    const req = request(url, {
      method: 'POST',
      headers: {
        ...signedHeaders(message, new Date()),
        'content-length': String(body.length),
        'user-agent': options.userAgent ?? 'integrations-gateway-webhooks/1',
      },
      lookup: guardedLookup(options),
      signal,
      // One socket per attempt: nothing pooled across endpoints or kept between attempts.
      agent: false,
    });
    req.on('response', (response) => {
      const statusCode = response.statusCode ?? 0;
      void firstKilobyte(response).then((text) => {
        if (statusCode >= 200 && statusCode < 300)
          resolve({ ok: true, statusCode, latencyMs: elapsed(), responseBody: text, error: null, timedOut: false });
        else if (statusCode >= 300 && statusCode < 400)
          resolve(failed(`redirect to ${response.headers.location ?? '?'} not followed`, statusCode, text));
        else resolve(failed(`HTTP ${statusCode}`, statusCode, text));
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (timeout.aborted) resolve(failed(`no answer within ${(options.timeoutMs ?? ATTEMPT_TIMEOUT_MS) / 1000} s`, null, '', true));
      else if (options.signal?.aborted) resolve(failed('cancelled'));
      else resolve(failed(error.code ? `${error.code}: ${error.message}` : error.message));
    });
    req.end(body);
  });
}
