// A JSON body as UTF-8 bytes, the same bytes as Buffer.from(JSON.stringify(value)), without that expression's
// cost on large bodies with text outside Latin-1. On Node 20 (V8 11), the string JSON.stringify builds for such
// a body is flattened before it can be measured or encoded, and that flattening grows faster than the body:
// a 74 kB `/connected` page with one "–" per description took ~0.9 ms to measure and encode against ~0.2 ms
// for the same page in ASCII (bench/analysis.md, "JSON bodies outside Latin-1"). Encoded element by element,
// every piece is small and the whole costs about as much as the ASCII page.

/**
 * A body is written in pieces only when it holds a list of at least this many items, at its top or as a member
 * of its top object (a REST page): for smaller bodies one JSON.stringify is cheaper (a 10-row sync page: ~30 µs
 * whole, ~60 µs in pieces).
 */
const PIECES_FROM_ITEMS = 32;

function holdsLongList(value: unknown, items: number): boolean {
  if (Array.isArray(value)) return value.length >= items;
  if (!isPlainObject(value)) return false;
  for (const key in value) {
    const member = value[key];
    if (Array.isArray(member) && member.length >= items) return true;
  }
  return false;
}

/** Objects nested deeper than this (only a cycle gets there) are left to JSON.stringify, which refuses it. */
const MAX_DEPTH = 8;

/**
 * Pieces are gathered into chunks of about this many UTF-16 code units: small enough that each flattens and
 * encodes quickly, large enough that the chunks are few.
 */
const CHUNK_UNITS = 8 * 1024;

/** The JSON text in chunks, then encoded once into a buffer of the exact size. */
class ChunkWriter {
  private readonly chunks: string[] = [];
  private pending = '';

  write(text: string): void {
    this.pending += text;
    if (this.pending.length >= CHUNK_UNITS) {
      this.chunks.push(this.pending);
      this.pending = '';
    }
  }

  bytes(): Buffer<ArrayBuffer> {
    if (this.pending !== '') this.chunks.push(this.pending);
    if (this.chunks.length === 1) return Buffer.from(this.chunks[0]!);
    let size = 0;
    for (const chunk of this.chunks) size += Buffer.byteLength(chunk);
    const buffer = Buffer.allocUnsafe(size);
    let offset = 0;
    for (const chunk of this.chunks) offset += buffer.write(chunk, offset);
    return buffer;
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
function encodeValue(value: unknown, depth: number, out: ChunkWriter): boolean {
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
  const out = new ChunkWriter();
  if (!encodeValue(value, 0, out)) throw new TypeError(`${typeof value} is not a JSON value`);
  return out.bytes();
}
