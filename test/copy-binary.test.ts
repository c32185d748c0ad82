// Large reads as binary COPY output (src/db/copy-binary.ts), on each database: a select's values written into
// the COPY as literals read back as the same statement with parameters does; the rows read the same however the
// output is cut into chunks; a finished COPY keeps nothing alive; and the export's byte-wise JSON writer
// (src/rest/export-lines.ts) writes what the string-wise reference does for any JSON PostgreSQL stores, and every
// other value (text, timestamp, boolean, integer, null) as a page writes it, from the value's binary output.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/client.js';
import { Prisma } from '../src/generated/prisma/client.js';
import { CopyBinaryTuples } from '../src/db/copy-binary.js';
import { raw, type Sql, sql } from '../src/query/sql.js';
import {
  BatchBytes,
  compactJsonText,
  csvCell,
  csvLayout,
  type FieldSource,
  ndjsonLayout,
  PIECE_BYTES,
  type RecordLayout,
} from '../src/rest/export-lines.js';
import type { RowFields } from '../src/db/binary-rows.js';
import { timestampTextSql } from '../src/timestamps.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Values as a parameter carries them: quotes, backslashes, what looks like SQL, non-ASCII, empty, null. */
const AWKWARD_TEXTS = ["it's", 'back\\slash', "E'\\x27'); DROP TABLE syncs; --", '$1 $$ $tag$', 'é ✓ 𝄞', '', ' ', '\t\n\r'];

/** The texts of every row of binary COPY output fed in `pieces`. */
function rowsOf(pieces: readonly Buffer[]): (string | null)[][] {
  const rows: (string | null)[][] = [];
  const tuples = new CopyBinaryTuples((row) => {
    rows.push(
      Array.from({ length: row.fieldCount }, (_, index) =>
        row.lengths[index]! < 0 ? null : row.data.toString('utf8', row.starts[index]!, row.starts[index]! + row.lengths[index]!),
      ),
    );
    row.keepFields(1);
  });
  for (const piece of pieces) {
    tuples.push(piece);
    // The last row's fields kept as every row went by (an export's next batch starts from them) read as they did.
    if (rows.length > 0)
      expect(tuples.keptValues((_, data, start, length) => data.toString('utf8', start, start + length))).toEqual(rows.at(-1)!.slice(1));
  }
  tuples.end();
  expect(tuples.rows).toBe(rows.length);
  return rows;
}

/** The lines a layout writes for every row of binary COPY output. */
function linesOf(output: Buffer, layout: RecordLayout): string {
  const pieces: Buffer[] = [];
  const out = new BatchBytes({
    buffer: () => Buffer.allocUnsafe(PIECE_BYTES),
    send: (buffer, length) => pieces.push(buffer.subarray(0, length)),
  });
  const tuples = new CopyBinaryTuples((row: RowFields) => layout(row, out));
  tuples.push(output);
  tuples.end();
  out.end();
  return Buffer.concat(pieces).toString();
}

async function copied(db: TestDatabase, select: Sql): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await db.raw.copyRows(select, (chunk) => chunks.push(Buffer.from(chunk)));
  return Buffer.concat(chunks);
}

describe.each(databaseKinds)('binary COPY reads (%s)', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(() => db.dispose());

  it('writes values as literals that read as the same statement with parameters', async () => {
    const values: unknown[] = [...AWKWARD_TEXTS, 42, -1.5, true, null, new Date('2026-11-27T12:34:56.789Z'), ['a,b', 'c"d', 'e\\f', null]];
    // Each value's cast: a timestamp is compared as the instant it names (drivers write a Date's text differently).
    const casts = values.map((value) =>
      value instanceof Date ? '::timestamptz::text' : Array.isArray(value) ? '::text[]::text' : '::text',
    );
    const expected = await db.raw.query<Record<string, unknown>>(
      `SELECT ${casts.map((cast, index) => `$${index + 1}${cast} AS c${index}`).join(', ')}`,
      values,
    );
    const select = sql`SELECT ${Prisma.join(values.map((value, index) => sql`${value}${raw(casts[index]!)}`))}`;
    expect(select.values).toEqual(values);
    expect(rowsOf([await copied(db, select)])).toEqual([Object.values(expected[0]!)]);
  });

  it('refuses a value holding a NUL character, as PostgreSQL refuses it as a parameter', async () => {
    await expect(db.raw.copyRows(sql`SELECT ${'a\0b'}::text`, () => {})).rejects.toThrow(/NUL/);
  });

  it('reads the same rows however the output is cut', async () => {
    const select = sql`SELECT g::text, CASE WHEN g % 3 = 0 THEN NULL ELSE repeat(${'é,"\\'}, g % 7) END, '' FROM generate_series(1, 400) AS g`;
    const whole = await copied(db, select);
    const expected = rowsOf([whole]);
    expect(expected).toHaveLength(400);
    expect(expected[2]).toEqual(['3', null, '']);
    expect(expected[1]).toEqual(['2', 'é,"\\é,"\\', '']);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: whole.length - 1 }), { maxLength: 1500 }), (cuts) => {
        const at = [0, ...cuts.sort((a, b) => a - b), whole.length];
        const pieces = at.slice(1).map((end, index) => whole.subarray(at[index], end));
        expect(rowsOf(pieces)).toEqual(expected);
      }),
      { numRuns: 200, seed: 11 },
    );
    // Output cut before its trailer is an error, not a short read.
    expect(() => rowsOf([whole.subarray(0, whole.length - 2)])).toThrow(/ended early/);
  });

  it.runIf(kind === 'postgres')('keeps nothing alive once a COPY has ended, read timeout or not', async () => {
    // pg gives a statement on a pool with a read timeout a timer; a COPY stream's must stop when it ends.
    const timed = await openDatabase({ databaseUrl: (db as TestDatabase & { url: string }).url, poolSize: 1, queryTimeoutMs: 60_000 });
    try {
      // A listener holding an object, and nothing else holding either once the COPY has ended.
      const copyHolding = async (): Promise<WeakRef<object>> => {
        const marker = { chunks: 0 };
        await timed.raw.copyRows(sql`SELECT g FROM generate_series(1, 1000) AS g`, () => {
          marker.chunks += 1;
        });
        expect(marker.chunks).toBeGreaterThan(0);
        return new WeakRef(marker);
      };
      const held = await copyHolding();
      // pg lets go of a statement when its connection is ready for the next one, a message that may come a
      // little after the COPY's end on a loaded machine: what is held for good is still held seconds later.
      const until = performance.now() + 3000;
      do {
        await new Promise((resolve) => setTimeout(resolve, 10));
        collectGarbage();
      } while (held.deref() !== undefined && performance.now() < until);
      expect(held.deref()).toBeUndefined();
    } finally {
      await timed.close();
    }
  });

  it("writes a JSON column's text byte by byte as the string-wise reference does", async () => {
    const values = fc.sample(fc.jsonValue({ maxDepth: 3 }), { numRuns: 300, seed: 39 }).map((value) => JSON.stringify(value));
    const texts = [
      ...values,
      '{"errors": ["a, \\"b\\": c", "x\\\\", "tab\\there"], "processed": 3}',
      '{"ratio": 1.50, "big": 12345678901234567890, "10": "index key", "text": "é ✓ \\u0001 \\": \\", "}',
      '{"a": "123", "b": [1, "45"], "c": "1.5 and 1234567890123456 in a string"}',
      '[]',
      '{}',
      '0',
      '"x"',
    ];
    const rows = await db.raw.query<{ text: string }>('SELECT value::jsonb::text AS text FROM unnest($1::text[]) AS value', [texts]);
    const source = [{ name: 'summary', property: 'summary', form: 'jsonText' as const, value: 'jsonb' as const }];
    const ndjson = ndjsonLayout(source);
    const csv = csvLayout(source);
    const written = (layout: typeof ndjson, text: string | null) => {
      // jsonb in binary: a version byte, then the text.
      const data = Buffer.concat([Buffer.of(1), Buffer.from(text ?? '')]);
      const pieces: Uint8Array[] = [];
      const out = new BatchBytes({
        buffer: () => Buffer.allocUnsafe(PIECE_BYTES),
        send: (buffer, length) => pieces.push(buffer.subarray(0, length)),
      });
      layout({ data, starts: Int32Array.of(0), lengths: Int32Array.of(text === null ? -1 : data.length) }, out);
      out.end();
      return Buffer.concat(pieces).toString();
    };
    for (const text of [...rows.map((row) => row.text), null]) {
      const page = compactJsonText(text);
      expect(written(ndjson, text)).toBe(`${JSON.stringify({ summary: page })}\n`);
      expect(written(csv, text)).toBe(`${csvCell(page)}\r\n`);
    }
  });
  it('writes text, timestamps, booleans and integers from their binary output as a page writes them', async () => {
    const texts = [
      ...AWKWARD_TEXTS,
      'a "quoted", comma',
      'line\nbreak\r\n',
      '\u0001\u0008\u000b\u000c\u001f\u007f',
      ...fc.sample(fc.string({ unit: 'binary', maxLength: 40 }), { numRuns: 200, seed: 37 }).map((text) => text.replaceAll('\0', '')),
    ];
    const instants = [
      'infinity',
      '-infinity',
      '2000-01-01T00:00:00Z',
      '1999-12-31T23:59:59.999Z',
      '1970-01-01T00:00:00Z',
      '1969-12-31T23:59:59.999Z',
      '1600-02-29T12:00:00.5Z',
      '0001-01-01T00:00:00Z',
      '9999-12-31T23:59:59.999Z',
      '0044-03-15 12:00:00+00 BC',
      '12345-06-01T00:00:00Z',
      ...fc
        .sample(fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_999 }), { numRuns: 300, seed: 38 })
        .map((ms) => new Date(ms).toISOString()),
    ];
    const count = Math.max(texts.length, instants.length);
    // Every fourth row null in each column; the reference is each value's text as a page reads it.
    const pick = <T>(list: readonly T[], index: number): T | null => (index % 4 === 3 ? null : list[index % list.length]!);
    const rows = Array.from({ length: count }, (_, index) => ({
      text: pick(texts, index),
      instant: pick(instants, index),
      flag: pick([true, false], index),
      number: pick([0, -1, 2_147_483_647, -2_147_483_648, 42], index),
    }));
    const values = sql`FROM unnest(${rows.map((row) => row.text)}::text[], ${rows.map((row) => row.instant)}::text[], ${rows.map((row) => row.flag)}::boolean[], ${rows.map((row) => row.number)}::int4[]) WITH ORDINALITY AS v(t, i, b, n, o)`;
    const ordered = sql`${values} ORDER BY o`;
    const expected = await db.raw.query<{ t: string | null; i: string | null; b: boolean | null; n: number | null }>(
      `SELECT t, ${timestampTextSql('i::timestamptz(3)')} AS i, b, n ${ordered.text}`,
      ordered.values,
    );
    const sources: FieldSource[] = [
      { name: 'text', property: 't', form: 'value', value: 'text' },
      { name: 'at', property: 'i', form: 'value', value: 'timestamp' },
      { name: 'flag', property: 'b', form: 'value', value: 'boolean' },
      { name: 'number', property: 'n', form: 'value', value: 'int4' },
    ];
    const output = await copied(db, sql`SELECT t, i::timestamptz(3), b, n ${ordered}`);
    expect(linesOf(output, ndjsonLayout(sources))).toBe(
      expected.map((row) => `${JSON.stringify({ text: row.t, at: row.i, flag: row.b, number: row.n })}\n`).join(''),
    );
    expect(linesOf(output, csvLayout(sources))).toBe(
      expected.map((row) => `${[row.t, row.i, row.b, row.n].map(csvCell).join(',')}\r\n`).join(''),
    );
  });
});
