import { randomBytes } from 'node:crypto';

/** Lowercase Crockford-like base32: digits and letters without i, l, o and u. Token prefixes use it too. */
export const ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** Prefixes make ids self-describing in logs and URLs (`con_…` is a connection). */
export type IdPrefix =
  | 'ten'
  | 'cat'
  | 'app'
  | 'con'
  | 'syn'
  | 'usr'
  | 'tok'
  | 'whk'
  | 'mbr'
  | 'inv'
  | 'ses'
  | 'act'
  | 'oac'
  | 'oaa'
  | 'key';

/** Encodes 16 bytes (or fewer) as lowercase Crockford-like base32 behind the prefix. */
export function formatId(prefix: IdPrefix, bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ID_ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += ID_ALPHABET[(buffer << (5 - bits)) & 31];
  return `${prefix}_${out}`;
}

export function newId(prefix: IdPrefix): string {
  return formatId(prefix, randomBytes(16));
}

/** Ids are at most this long; longer input cannot be an id and is rejected before any query. */
export const MAX_ID_LENGTH = 64;
