import type { BinaryValue, RowFields } from '../db/binary-rows.js';
import { TIMESTAMP_TEXT_BYTES, writeBinaryTimestamp } from '../timestamps.js';

// An export's lines written from the bytes of its rows (rest/export.ts): PostgreSQL sends each row's values as
// stored, in binary COPY output (db/copy-binary.ts), and here each record is written from them into the batch's
// buffer, byte by byte, as a page writes it: a text quoted, a timestamp in the API's text, a JSON column's text
// made compact. No row becomes a string or an object on the way, and PostgreSQL formats nothing (its to_char
// and to_json cost more than the whole of the gateway's work).

/**
 * Where an exported field's value comes from, when it is written from rows: a row property's value (its text as
 * the field's serializer writes it), or a JSON column's text (a JSON text field); and how the property arrives.
 */
export interface FieldSource {
  name: string;
  property: string;
  form: 'value' | 'jsonText';
  value: BinaryValue;
}

/**
 * Bytes of a piece of a batch (BatchBytes), sent on as soon as it is full: the client gets bytes from a batch's
 * first rows on, and what waits to be sent is a few pieces rather than a batch.
 */
export const PIECE_BYTES = 1 << 18;

/** Where a batch's pieces go (rest/export-body.ts): the buffers to write them in, and their sending. */
export interface PieceSink {
  /** A buffer of PIECE_BYTES to write a piece in: one the sink got back from an earlier piece when it has one. */
  buffer(): Buffer;
  /** Sends bytes `[0, length)` of `buffer` (one `buffer()` gave, or a larger one of the writer's own) on. */
  send(buffer: Buffer, length: number): void;
  /** Null while the client has room for more, else a promise that settles when it has: the read waits for it. */
  room?(): Promise<void> | null;
}

/**
 * A batch's bytes, appended into pieces of PIECE_BYTES (a larger one only for a larger single write), each sent
 * on once full (and the last at `end`).
 */
export class BatchBytes {
  buffer: Buffer;
  length = 0;

  constructor(private readonly sink: PieceSink) {
    this.buffer = sink.buffer();
  }

  /** Makes room for `bytes` more in the current piece, sending it on and starting a new one when they do not fit. */
  reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    if (this.length > 0) this.sink.send(this.buffer, this.length);
    this.buffer = bytes <= PIECE_BYTES ? this.sink.buffer() : Buffer.allocUnsafe(bytes);
    this.length = 0;
  }

  append(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.reserve(text.length * 3);
    this.length += this.buffer.write(text, this.length);
  }

  appendBytes(source: Buffer, start: number, end: number): void {
    this.reserve(end - start);
    this.length += source.copy(this.buffer, this.length, start, end);
  }

  /** Sends the last piece on. */
  end(): void {
    if (this.length > 0) this.sink.send(this.buffer, this.length);
    this.length = 0;
  }
}

/** How a row's values make one line of the export. */
export type RecordLayout = (row: RowFields, out: BatchBytes) => void;

type FieldWriter = (row: RowFields, out: BatchBytes) => void;
type ValueWriter = (row: RowFields, field: number, out: BatchBytes) => void;

/** NDJSON: `{"name":value,…}` and a line end, each value as JSON writes the page's. */
export function ndjsonLayout(sources: readonly FieldSource[]): RecordLayout {
  const writers = sources.map((source, field) =>
    fieldWriter(`${field === 0 ? '{' : ','}${JSON.stringify(source.name)}:`, field, valueWriter(source, 'json')),
  );
  return lineLayout(writers, '}\n');
}

/** CSV: the cells, comma-separated, and CRLF (RFC 4180), each value as csvCell writes the page's. */
export function csvLayout(sources: readonly FieldSource[]): RecordLayout {
  const writers = sources.map((source, field) => fieldWriter(field === 0 ? '' : ',', field, valueWriter(source, 'csv')));
  return lineLayout(writers, '\r\n');
}

function lineLayout(writers: readonly FieldWriter[], lineEnd: string): RecordLayout {
  const end = fixedBytes(lineEnd);
  return (row, out) => {
    for (const writer of writers) writer(row, out);
    end(row, out);
  };
}

/** Writes fixed text, then field `field`'s value. */
function fieldWriter(text: string, field: number, value: ValueWriter): FieldWriter {
  const fixed = fixedBytes(text);
  return (row, out) => {
    fixed(row, out);
    value(row, field, out);
  };
}

/** Writes fixed text (a few bytes: copied by hand, cheaper than a native copy's call). */
function fixedBytes(text: string): FieldWriter {
  const bytes = Buffer.from(text);
  return (_row, out) => {
    out.reserve(bytes.length);
    const buffer = out.buffer;
    let at = out.length;
    for (let index = 0; index < bytes.length; index += 1) buffer[at++] = bytes[index]!;
    out.length = at;
  };
}

/** How each kind of value is written, in NDJSON (as JSON) and in CSV (as a cell). */
const VALUE_WRITERS: Record<'json' | 'csv', Record<Exclude<BinaryValue, 'jsonb'>, ValueWriter>> = {
  json: {
    text: jsonStringBytes,
    enum: jsonStringBytes,
    timestamp: timestampBytes(true, 'null'),
    boolean: booleanBytes('null'),
    int4: int4Bytes('null'),
  },
  csv: { text: csvTextBytes, enum: csvTextBytes, timestamp: timestampBytes(false, ''), boolean: booleanBytes(''), int4: int4Bytes('') },
};

/** The field's value writer; a JSON text field needs a jsonb column, and a jsonb column is written only as JSON text. */
function valueWriter(source: FieldSource, quoting: 'json' | 'csv'): ValueWriter {
  if ((source.form === 'jsonText') !== (source.value === 'jsonb')) {
    throw new Error(`field ${source.name} is not written from a ${source.value} value`);
  }
  return source.value === 'jsonb' ? jsonTextBytes(quoting) : VALUE_WRITERS[quoting][source.value];
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SPACE = 0x20;
const COMMA = 0x2c;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const BACKSPACE = 0x08;
const TAB = 0x09;
const LINE_FEED = 0x0a;
const FORM_FEED = 0x0c;
const CARRIAGE_RETURN = 0x0d;
const HEX = Buffer.from('0123456789abcdef');

/** A text as a JSON string, escaped as JSON.stringify escapes it (null: `null`). */
function jsonStringBytes(row: RowFields, field: number, out: BatchBytes): void {
  const length = row.lengths[field]!;
  if (length < 0) {
    out.append('null');
    return;
  }
  const start = row.starts[field]!;
  const end = start + length;
  const source = row.data;
  // At most six bytes for one (\u00XX), and the quotes.
  out.reserve(6 * length + 2);
  const bytes = out.buffer;
  let at = out.length;
  bytes[at++] = QUOTE;
  for (let index = start; index < end; index += 1) {
    const byte = source[index]!;
    if (byte >= SPACE && byte !== QUOTE && byte !== BACKSLASH) {
      bytes[at++] = byte;
      continue;
    }
    bytes[at++] = BACKSLASH;
    if (byte === QUOTE || byte === BACKSLASH) bytes[at++] = byte;
    else if (byte === LINE_FEED)
      bytes[at++] = 0x6e; // n
    else if (byte === CARRIAGE_RETURN)
      bytes[at++] = 0x72; // r
    else if (byte === TAB)
      bytes[at++] = 0x74; // t
    else if (byte === BACKSPACE)
      bytes[at++] = 0x62; // b
    else if (byte === FORM_FEED)
      bytes[at++] = 0x66; // f
    else {
      bytes[at++] = 0x75; // u
      bytes[at++] = ZERO;
      bytes[at++] = ZERO;
      bytes[at++] = HEX[byte >> 4]!;
      bytes[at++] = HEX[byte & 15]!;
    }
  }
  bytes[at++] = QUOTE;
  out.length = at;
}

/** A text as a CSV cell (csvCell): quoted, its quotes doubled, when it holds a quote, a comma or a line break. */
function csvTextBytes(row: RowFields, field: number, out: BatchBytes): void {
  const length = row.lengths[field]!;
  if (length <= 0) return;
  const start = row.starts[field]!;
  const end = start + length;
  const source = row.data;
  let quoted = false;
  for (let index = start; index < end && !quoted; index += 1) {
    const byte = source[index]!;
    quoted = byte === QUOTE || byte === COMMA || byte === LINE_FEED || byte === CARRIAGE_RETURN;
  }
  if (!quoted) {
    out.appendBytes(source, start, end);
    return;
  }
  out.reserve(2 * length + 2);
  const bytes = out.buffer;
  let at = out.length;
  bytes[at++] = QUOTE;
  for (let index = start; index < end; index += 1) {
    const byte = source[index]!;
    if (byte === QUOTE) bytes[at++] = QUOTE;
    bytes[at++] = byte;
  }
  bytes[at++] = QUOTE;
  out.length = at;
}

/** A timestamp in the API's text (writeBinaryTimestamp), quoted for JSON; `nullText` for null (and ±infinity). */
function timestampBytes(quoted: boolean, nullText: string): ValueWriter {
  return (row, field, out) => {
    if (row.lengths[field]! < 0) return out.append(nullText);
    // A year past 9999 takes a few more digits.
    out.reserve(TIMESTAMP_TEXT_BYTES + 8);
    const bytes = out.buffer;
    const at = out.length;
    const written = writeBinaryTimestamp(row.data, row.starts[field]!, bytes, quoted ? at + 1 : at);
    if (written === 0) return out.append(nullText);
    if (!quoted) {
      out.length = at + written;
      return;
    }
    bytes[at] = QUOTE;
    bytes[at + 1 + written] = QUOTE;
    out.length = at + written + 2;
  };
}

function booleanBytes(nullText: string): ValueWriter {
  return (row, field, out) => out.append(row.lengths[field]! < 0 ? nullText : row.data[row.starts[field]!] === 1 ? 'true' : 'false');
}

function int4Bytes(nullText: string): ValueWriter {
  return (row, field, out) => out.append(row.lengths[field]! < 0 ? nullText : String(row.data.readInt32BE(row.starts[field]!)));
}

/** Separators of PostgreSQL's jsonb text (`", "`, `": "`), strings matched whole so that theirs are kept. */
const JSONB_SEPARATOR = /("(?:[^"\\]|\\.)*")|([,:]) /g;
/**
 * What JSON.parse then JSON.stringify would write otherwise than jsonb's text without its spaces: a number with a
 * fraction (`1.50`, `1.0`), one past a double's exact integers (16 digits), a key that is an array index (which
 * JavaScript objects put first). Strings may match too: they take the slow path, which is as exact.
 */
const NOT_COMPACTED_ALONE = /\d\.|\d{16}|"\d+": /;

/**
 * `JSON.stringify(JSON.parse(text))` of PostgreSQL's text of a jsonb value (SQL null: `null`), which is what a
 * page's JSON text field writes (pg parses the column, the resolver stringifies it): jsonb writes `", "` and
 * `": "` between members and nothing else outside strings, so dropping those spaces is enough, unless the text
 * holds what JSON.parse would change. The reference for the byte-wise writer below, and its way out.
 */
export function compactJsonText(text: string | null): string {
  if (text === null) return 'null';
  return NOT_COMPACTED_ALONE.test(text) ? JSON.stringify(JSON.parse(text)) : text.replace(JSONB_SEPARATOR, '$1$2');
}

/** One CSV cell: empty for null, JSON text for objects and arrays, quoted when it holds a comma, quote or line break. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * Writes field `field`, a jsonb value in binary (its text), as a JSON text field's value: compactJsonText of it,
 * then as a JSON string (`json`: quotes and backslashes escaped; the text holds no control character, which
 * jsonb escapes) or as a CSV cell (`csv`: quoted, its quotes doubled, when it holds a quote or a comma).
 * One pass over the bytes drops the spaces outside strings (only separators have them) and watches for what
 * JSON.parse would change (compactJsonText's NOT_COMPACTED_ALONE: a digit before a dot, 16 digits in a row, a
 * string of digits, such as an index key); on those the field is written from compactJsonText instead.
 */
function jsonTextBytes(quoting: 'json' | 'csv'): ValueWriter {
  const json = quoting === 'json';
  const slow = (text: string | null): string => (json ? JSON.stringify(compactJsonText(text)) : csvCell(compactJsonText(text)));
  const nullText = slow(null);
  return (row, field, out) => {
    if (row.lengths[field]! < 0) return out.append(nullText);
    // jsonb's binary output is a version byte (1), then the value's text.
    const start = row.starts[field]! + 1;
    const length = row.lengths[field]! - 1;
    const source = row.data;
    const end = start + length;
    out.reserve(2 * length + 2);
    const bytes = out.buffer;
    const mark = out.length;
    let at = mark;
    bytes[at++] = QUOTE;
    let inString = false;
    let escaped = false;
    let digitsOnly = false;
    let stringLength = 0;
    let digits = 0;
    let quoted = false;
    let exact = true;
    for (let index = start; index < end; index += 1) {
      const byte = source[index]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) {
          escaped = true;
          digitsOnly = false;
        } else if (byte === QUOTE) {
          inString = false;
          if (digitsOnly && stringLength > 0) {
            exact = false;
            break;
          }
        } else {
          stringLength += 1;
          if (byte < ZERO || byte > NINE) digitsOnly = false;
        }
      } else if (byte === SPACE) continue;
      else if (byte >= ZERO && byte <= NINE) {
        digits += 1;
        if (digits >= 16) {
          exact = false;
          break;
        }
      } else {
        if (byte === DOT && digits > 0) {
          exact = false;
          break;
        }
        digits = 0;
        if (byte === QUOTE) {
          inString = true;
          digitsOnly = true;
          stringLength = 0;
        }
      }
      if (json) {
        if (byte === QUOTE || byte === BACKSLASH) bytes[at++] = BACKSLASH;
      } else if (byte === QUOTE) {
        bytes[at++] = QUOTE;
        quoted = true;
      } else if (byte === COMMA) quoted = true;
      bytes[at++] = byte;
    }
    if (!exact) return out.append(slow(source.toString('utf8', start, end)));
    if (json || quoted) bytes[at++] = QUOTE;
    else {
      // A cell with no quote or comma (a number, `{}`) goes unquoted: drop the opening quote.
      bytes.copyWithin(mark, mark + 1, at);
      at -= 1;
    }
    out.length = at;
  };
}
