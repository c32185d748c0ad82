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

/** Gives a request the id it already had (a request handed from one path to another keeps its id). */
export function assignRequestId(request: Request, id: string): void {
  requestIds.set(request, id);
}
