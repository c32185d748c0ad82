import type { RecordPart, RowFields } from '../query/list-export.js';

// An export's lines written from the bytes of its rows (rest/export.ts): PostgreSQL writes each record's text as
// a few text columns and sends them as binary COPY output (db/copy-binary.ts); here those bytes are copied into
// the batch's buffer, and the JSON text fields made compact as a page writes them, byte by byte. No row becomes
// a string or an object on the way.

/** Where an exported field's value comes from, when PostgreSQL writes it: a row property's value, or a JSON column's text. */
export interface FieldSource {
  name: string;
  property: string;
  form: 'value' | 'jsonText';
  /** A value whose text never holds a quote, a comma or a line break (a boolean, a number, a timestamp, an enum's name). */
  plain: boolean;
}

/**
 * Bytes of a piece of a batch (BatchBytes), sent on as soon as it is full: the client gets bytes from a batch's
 * first rows on, and what waits to be sent is a few pieces rather than a batch. (The size does not change how
 * often V8 collects: 16 KB to 256 KB measured alike.)
 */
const PIECE_BYTES = 1 << 18;

/**
 * A batch's bytes, appended into pieces of PIECE_BYTES (a larger one only for a larger single write), each handed
 * to `onPiece` once full (and the last at `end`), which sends it on: no piece outlives its sending for long.
 */
export class BatchBytes {
  buffer = Buffer.allocUnsafe(PIECE_BYTES);
  length = 0;

  constructor(private readonly onPiece: (piece: Uint8Array) => void) {}

  /** Makes room for `bytes` more in the current piece, handing it over and starting a new one when they do not fit. */
  reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    if (this.length > 0) this.onPiece(this.buffer.subarray(0, this.length));
    this.buffer = Buffer.allocUnsafe(Math.max(PIECE_BYTES, bytes));
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

  /** Hands over the last piece. */
  end(): void {
    if (this.length > 0) this.onPiece(this.buffer.subarray(0, this.length));
    this.length = 0;
  }
}

/** The columns PostgreSQL writes for a batch's rows, and how a row's columns make one line of the export. */
export interface RecordLayout {
  columns: RecordPart[][];
  write: (row: RowFields, out: BatchBytes) => void;
}

type FieldWriter = (row: RowFields, out: BatchBytes) => void;

/** Writes column `member` of a row as PostgreSQL wrote it. */
const columnBytes =
  (member: number): FieldWriter =>
  (row, out) =>
    out.appendBytes(row.data, row.starts[member]!, row.starts[member]! + row.lengths[member]!);

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

/** A piece of a record's line: a part of a column PostgreSQL writes (fixed text, a value), or a JSON text field written here. */
type LinePiece = RecordPart | { jsonText: string };

/**
 * A layout from a line's pieces: each run of fixed texts and values is one column PostgreSQL writes (the texts as
 * literals), so that a row is a few copies; each JSON text field is its own column, written here (jsonTextBytes);
 * fixed text with no value beside it (between two JSON text fields, after the last) is written here.
 */
function layoutOf(pieces: readonly LinePiece[], quoting: 'json' | 'csv'): RecordLayout {
  const columns: RecordPart[][] = [];
  const writers: FieldWriter[] = [];
  let run: RecordPart[] = [];
  const endRun = () => {
    if (run.some((part) => !('literal' in part))) writers.push(columnBytes(columns.push(run) - 1));
    else if (run.length > 0) writers.push(fixedBytes(run.map((part) => (part as { literal: string }).literal).join('')));
    run = [];
  };
  for (const piece of pieces) {
    if (!('jsonText' in piece)) run.push(piece);
    else {
      endRun();
      writers.push(jsonTextBytes(columns.push([{ text: piece.jsonText }]) - 1, quoting));
    }
  }
  endRun();
  return { columns, write: writeAll(writers) };
}

/** NDJSON: `{"name":value,…}` and a line end; a JSON text field's value quoted as a JSON string. */
export function ndjsonLayout(sources: readonly FieldSource[]): RecordLayout {
  const pieces: LinePiece[] = [{ literal: '{' }];
  for (const [index, source] of sources.entries()) {
    pieces.push({ literal: `${index === 0 ? '' : ','}${JSON.stringify(source.name)}:` });
    pieces.push(source.form === 'value' ? { json: source.property } : { jsonText: source.property });
  }
  pieces.push({ literal: '}\n' });
  return layoutOf(pieces, 'json');
}

/** CSV: the cells, comma-separated, and CRLF (RFC 4180); a JSON text field's value as a cell. */
export function csvLayout(sources: readonly FieldSource[]): RecordLayout {
  const pieces: LinePiece[] = [];
  for (const [index, source] of sources.entries()) {
    if (index > 0) pieces.push({ literal: ',' });
    pieces.push(source.form === 'value' ? { csv: source.property, plain: source.plain } : { jsonText: source.property });
  }
  pieces.push({ literal: '\r\n' });
  return layoutOf(pieces, 'csv');
}

function writeAll(writers: readonly FieldWriter[]): FieldWriter {
  return (row, out) => {
    for (const writer of writers) writer(row, out);
  };
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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SPACE = 0x20;
const COMMA = 0x2c;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/**
 * Writes column `member`, PostgreSQL's text of a jsonb value, as a JSON text field's value: compactJsonText of it,
 * then as a JSON string (`json`: quotes and backslashes escaped; the text holds no control character, which
 * jsonb escapes) or as a CSV cell (`csv`: quoted, its quotes doubled, when it holds a quote or a comma).
 * One pass over the bytes drops the spaces outside strings (only separators have them) and watches for what
 * JSON.parse would change (compactJsonText's NOT_COMPACTED_ALONE: a digit before a dot, 16 digits in a row, a
 * string of digits, such as an index key); on those the field is written from compactJsonText instead.
 */
function jsonTextBytes(member: number, quoting: 'json' | 'csv'): FieldWriter {
  const json = quoting === 'json';
  const slow = (text: string | null): string => (json ? JSON.stringify(compactJsonText(text)) : csvCell(compactJsonText(text)));
  const nullText = slow(null);
  return (row, out) => {
    const start = row.starts[member]!;
    const length = row.lengths[member]!;
    if (length < 0) return out.append(nullText);
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
