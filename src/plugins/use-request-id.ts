import type { Plugin } from 'graphql-yoga';
import { newRequestId } from '../errors.js';

const requestIds = new WeakMap<Request, string>();

/** The request's id: the `req_<digits>` that error bodies and log lines show. */
export function requestIdOf(request: Request): string {
  let id = requestIds.get(request);
  if (!id) {
    id = newRequestId();
    requestIds.set(request, id);
  }
  return id;
}

/** Gives every request an id and echoes it in `X-Request-Id`. */
export function useRequestId(): Plugin {
  return {
    onRequest({ request }) {
      requestIdOf(request);
    },
    onResponse({ request, response }) {
      response.headers.set('X-Request-Id', requestIdOf(request));
    },
  };
}
