import { ApiError } from '../errors.js';
import { MAX_ID_LENGTH } from '../ids.js';

const ID_SHAPE = /^[a-z]{3}_[0-9a-z]{1,60}$/;

/**
 * A malformed id is a client error (400); a well-formed id that names nothing the caller can see is a 404,
 * whatever tenant it belongs to.
 */
export function assertIdShape(id: string, what: string): string {
  if (id.length > MAX_ID_LENGTH || !ID_SHAPE.test(id)) {
    throw new ApiError('INVALID_QUERY', `${what} id "${id.slice(0, MAX_ID_LENGTH)}" is not a valid id`);
  }
  return id;
}
