import pg from 'pg';
import pgUtils from 'pg/lib/utils.js';
import type { Sql } from '../query/sql.js';

// A large read taken as PostgreSQL's binary COPY output (`COPY (SELECT …) TO STDOUT (FORMAT binary)`): the rows
// arrive as bytes, which the reader walks in place (CopyBinaryTuples) instead of pg turning every field into a
// string and every row into an array. A field's bytes are the value as the column type's binary output writes
// it (text: its UTF-8 bytes). Used by the export (rest/export.ts), which writes its records from those bytes.

/**
 * Rows per batch of a reader whose database hands a COPY's output over whole (PGlite, in this process): a batch
 * is then held whole before it is written, so it is kept small. PostgreSQL's output streams, paused while the
 * client's queue is full, and takes the export's larger batches.
 */
export const WHOLE_BATCH_ROWS = 1000;

/**
 * A select statement as a COPY of its rows in binary form, to the client (`STDOUT`) or, on PGlite, to a blob
 * the result carries (`'/dev/blob'`). COPY takes no parameters, so each value is written
 * into the text as a literal of unknown type holding the very text pg would send as the parameter (prepareValue),
 * which PostgreSQL types from its place as it would the parameter. The literal is an escape string (E'…'), whose
 * meaning does not depend on standard_conforming_strings; a value holding a NUL is refused, as PostgreSQL
 * refuses it as a parameter.
 */
export function copyStatement(select: Sql, target: 'STDOUT' | "'/dev/blob'"): string {
  const { strings, values } = select;
  let text = `COPY (${strings[0]}`;
  for (let index = 0; index < values.length; index += 1) text += literalOf(values[index]) + strings[index + 1];
  return `${text}) TO ${target} (FORMAT binary)`;
}

function literalOf(value: unknown): string {
  const prepared = pgUtils.prepareValue(value);
  if (prepared === null) return 'NULL';
  if (typeof prepared !== 'string') throw new TypeError('a COPY statement takes no binary values');
  if (prepared.includes('\0')) throw new TypeError('a value holds a NUL character');
  return `E'${prepared.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

/**
 * A COPY to the client as pg's own statement: pg parses the CopyData messages and hands each to
 * handleCopyData, whose chunk (one row, for COPY's output) is a view of the bytes pg read from the socket. As any
 * statement it ends with 'end' or 'error', and its read timeout, if the pool has one, stops when it ends.
 */
export class CopyOutQuery extends pg.Query {
  constructor(
    text: string,
    private readonly onChunk: (chunk: Buffer) => void,
  ) {
    super(text);
  }

  handleCopyData(message: { chunk: Buffer }): void {
    this.onChunk(message.chunk);
  }
}

/** The 11 bytes that open binary COPY output, then a flags word and a header extension's length. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const HEADER_BYTES = SIGNATURE.length + 8;
const MAX_FIELDS = 1600;

/**
 * Walks binary COPY output as it arrives, in chunks cut anywhere, and hands over each row (tuple) in place: the
 * fields of the current row are `data[starts[i] .. starts[i] + lengths[i])`, a length of -1 for null. A row that
 * straddles two chunks is joined in a buffer the reader reuses; nothing is allocated per row or per chunk.
 */
export class CopyBinaryTuples {
  data: Buffer = Buffer.alloc(0);
  fieldCount = 0;
  readonly starts = new Int32Array(MAX_FIELDS);
  readonly lengths = new Int32Array(MAX_FIELDS);
  rows = 0;
  private headerRead = false;
  private ended = false;
  private carry = Buffer.allocUnsafe(1 << 16);
  private restLength = 0;
  private keptData: Buffer | null = null;
  private keptBegin = 0;
  private keptEnd = 0;

  constructor(private readonly onTuple: (tuples: CopyBinaryTuples) => void) {}

  /**
   * Keeps the current row's fields from `from` on readable (keptValues), in place of those kept before: for a few
   * short fields (sort keys) of every row, of which the last row's are wanted once the output has ended. Nothing
   * is copied unless the row lies in the buffer that carries cut rows, and that buffer is about to be reused.
   */
  keepFields(from: number): void {
    if (from >= this.fieldCount) {
      this.keptData = null;
      return;
    }
    // The fields lie one after the other, each after its length word.
    this.keptData = this.data;
    this.keptBegin = this.starts[from]! - 4;
    const last = this.fieldCount - 1;
    this.keptEnd = this.starts[last]! + Math.max(this.lengths[last]!, 0);
  }

  /** The fields keepFields kept, in order, each as `decode` reads its bytes `data[start .. start + length)` (null for null). */
  keptValues<T>(decode: (index: number, data: Buffer, start: number, length: number) => T): (T | null)[] {
    const values: (T | null)[] = [];
    const data = this.keptData;
    if (!data) return values;
    for (let at = this.keptBegin; at < this.keptEnd; ) {
      const length = data.readInt32BE(at);
      at += 4;
      values.push(length < 0 ? null : decode(values.length, data, at, length));
      if (length > 0) at += length;
    }
    return values;
  }

  push(chunk: Buffer): void {
    // Bytes of a row cut off at the end of the last chunk are carried, in a buffer of this reader's own that is
    // reused, ahead of this chunk's: no buffer is allocated per chunk.
    let data = chunk;
    let end = chunk.length;
    if (this.restLength > 0) {
      end = this.restLength + chunk.length;
      if (end > this.carry.length) {
        const grown = Buffer.allocUnsafe(Math.max(2 * this.carry.length, end));
        this.carry.copy(grown, 0, 0, this.restLength);
        this.carry = grown;
      }
      chunk.copy(this.carry, this.restLength);
      data = this.carry;
      this.restLength = 0;
    }
    let at = 0;
    if (!this.headerRead) {
      const extension = end >= HEADER_BYTES ? data.readInt32BE(SIGNATURE.length + 4) : 0;
      if (end < HEADER_BYTES + extension) {
        this.carryFrom(data, 0, end);
        return;
      }
      if (!data.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new Error('not binary COPY output');
      at = HEADER_BYTES + extension;
      this.headerRead = true;
    }
    this.data = data;
    while (at + 2 <= end) {
      const count = data.readInt16BE(at);
      if (count === -1) {
        this.ended = true;
        return;
      }
      if (count > MAX_FIELDS) throw new Error(`a COPY row of ${count} fields`);
      let position = at + 2;
      let whole = true;
      for (let field = 0; field < count; field += 1) {
        if (position + 4 > end) {
          whole = false;
          break;
        }
        const length = data.readInt32BE(position);
        position += 4;
        this.starts[field] = position;
        this.lengths[field] = length;
        if (length > 0) position += length;
        if (position > end) {
          whole = false;
          break;
        }
      }
      if (!whole) break;
      this.fieldCount = count;
      this.rows += 1;
      this.onTuple(this);
      at = position;
    }
    if (at < end) this.carryFrom(data, at, end);
  }

  /** Keeps `data[from .. end)`, the start of a row, for the next chunk. */
  private carryFrom(data: Buffer, from: number, end: number): void {
    if (this.keptData === this.carry) {
      this.keptData = Buffer.from(this.carry.subarray(this.keptBegin, this.keptEnd));
      this.keptEnd -= this.keptBegin;
      this.keptBegin = 0;
    }
    const length = end - from;
    if (data === this.carry) this.carry.copyWithin(0, from, end);
    else {
      if (length > this.carry.length) this.carry = Buffer.allocUnsafe(Math.max(2 * this.carry.length, length));
      data.copy(this.carry, 0, from, end);
    }
    this.restLength = length;
  }

  /** Checks that the output ended with its trailer, nothing cut off. */
  end(): void {
    if (!this.ended || this.restLength > 0) throw new Error('binary COPY output ended early');
  }
}
