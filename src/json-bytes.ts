// A JSON body as UTF-8 bytes, the same bytes as Buffer.from(JSON.stringify(value)), without that expression's
// cost on large bodies with text outside Latin-1. On Node 20 (V8 11), the string JSON.stringify builds for a large
// body is a tree of pieces that must be flattened before it can be encoded, and for text outside Latin-1 that
// flattening costs more than the stringify itself: a 93 kB GraphQL answer (50 connections named "Adyen – …" with
// 10 runs each) took ~950 µs as Buffer.from(JSON.stringify(…)), ~530 µs written here (~520 µs and ~410 µs for the
// same answer in ASCII). A large body is written element by element of its lists, each piece a small flat string
// encoded straight into one buffer (TextEncoder.encodeInto, which Node 20 runs with simdutf).

/**
 * A body is written in pieces only when it holds a list of at least this many items (a REST page, a GraphQL
 * answer's `nodes`): for smaller bodies one JSON.stringify is cheaper (a 10-row sync page: ~30 µs whole, ~40 µs
 * in pieces).
 */
const PIECES_FROM_ITEMS = 32;

/** Lists are looked for this deep: a REST page's `data`, a GraphQL answer's `data.<field>.nodes`. */
const LIST_SEARCH_DEPTH = 4;

function holdsLongList(value: unknown, items: number, depth = 0): boolean {
  if (Array.isArray(value)) return value.length >= items;
  if (depth >= LIST_SEARCH_DEPTH || !isPlainObject(value)) return false;
  for (const key in value) {
    if (holdsLongList(value[key], items, depth + 1)) return true;
  }
  return false;
}

/** Objects nested deeper than this (only a cycle gets there) are left to JSON.stringify, which refuses it. */
const MAX_DEPTH = 8;

const encoder = new TextEncoder();
/** Reused by every call (it is synchronous): the bytes are copied out at the end. */
let scratch = Buffer.allocUnsafe(64 * 1024);

/** The JSON text piece by piece, each encoded into the scratch buffer as it comes. */
class ByteWriter {
  private at = 0;

  write(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    if (scratch.length - this.at < text.length * 3) {
      const grown = Buffer.allocUnsafe(Math.max(scratch.length * 2, this.at + text.length * 3));
      scratch.copy(grown, 0, 0, this.at);
      scratch = grown;
    }
    this.at += encoder.encodeInto(text, this.at === 0 ? scratch : scratch.subarray(this.at)).written;
  }

  bytes(): Buffer<ArrayBuffer> {
    return Buffer.from(scratch.subarray(0, this.at));
  }
}

/** A plain object without its own toJSON: JSON.stringify writes its members in Object.keys order. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return (prototype === Object.prototype || prototype === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}

/**
 * Writes `value` as JSON.stringify does; false when it writes nothing (undefined, a function, a symbol).
 * Plain objects are written member by member and arrays element by element, each element whole: the elements
 * of a list (its items) are the pieces.
 */
function encodeValue(value: unknown, depth: number, out: ByteWriter): boolean {
  if (Array.isArray(value)) {
    out.write('[');
    for (let i = 0; i < value.length; i++) {
      // An array holds null where an object would leave the member out.
      out.write(`${i > 0 ? ',' : ''}${(JSON.stringify(value[i]) as string | undefined) ?? 'null'}`);
    }
    out.write(']');
    return true;
  }
  if (depth < MAX_DEPTH && isPlainObject(value)) {
    out.write('{');
    let first = true;
    for (const key of Object.keys(value)) {
      const member = value[key];
      if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
      out.write(`${first ? '' : ','}${JSON.stringify(key)}:`);
      first = false;
      encodeValue(member, depth + 1, out);
    }
    out.write('}');
    return true;
  }
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) return false;
  out.write(text);
  return true;
}

/**
 * `value` as JSON in UTF-8: byte for byte `Buffer.from(JSON.stringify(value))` for every value JSON.stringify
 * accepts without a replacer (plain objects are written member by member, arrays element by element, and each
 * element and every other value by JSON.stringify itself). One difference no body here has: a toJSON method is
 * called with the key '' rather than its member's name. Throws where JSON.stringify throws; a value it
 * answers with undefined (undefined itself, a function) is an error here, since a body must hold something.
 */
export function jsonBytes(value: unknown, piecesFromItems = PIECES_FROM_ITEMS): Buffer<ArrayBuffer> {
  if (!holdsLongList(value, piecesFromItems)) {
    const text = JSON.stringify(value) as string | undefined;
    if (text === undefined) throw new TypeError(`${typeof value} is not a JSON value`);
    return Buffer.from(text);
  }
  const out = new ByteWriter();
  if (!encodeValue(value, 0, out)) throw new TypeError(`${typeof value} is not a JSON value`);
  return out.bytes();
}
