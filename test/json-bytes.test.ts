import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonBytes } from '../src/json-bytes.js';

// jsonBytes writes every body the REST facade and the plugins answer with: it must be byte for byte what
// Buffer.from(JSON.stringify(value)) is, for whatever the executor or a plugin hands it.

/** Objects as the GraphQL executor builds them: null prototype, members in selection order. */
function executorObject(entries: Record<string, unknown>): Record<string, unknown> {
  return Object.assign(Object.create(null) as Record<string, unknown>, entries);
}

const reference = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('jsonBytes', () => {
  it('writes the bytes JSON.stringify would, for any JSON-like value (property)', () => {
    const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }));
    const leaf = fc.oneof(
      text,
      fc.double(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.date({ noInvalidDate: false }),
    );
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object'), tie('executor')),
      array: fc.array(tie('value'), { maxLength: 6 }),
      object: fc.dictionary(text, tie('value'), { maxKeys: 6 }),
      executor: fc.dictionary(text, tie('value'), { maxKeys: 6 }).map(executorObject),
    }));
    fc.assert(
      fc.property(value, (v) => {
        // Written in pieces (any list) and whole.
        for (const piecesFrom of [0, Infinity]) {
          if (JSON.stringify(v) === undefined) expect(() => jsonBytes(v, piecesFrom)).toThrow(TypeError);
          else expect(jsonBytes(v, piecesFrom).equals(reference(v))).toBe(true);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('writes a large page with text outside Latin-1 (the case it exists for) exactly', () => {
    const page = {
      msg: '500 connections',
      data: Array.from({ length: 500 }, (_, i) =>
        executorObject({
          id: `con_${i}`,
          description: `Application ${i} – syncs “orders” ${'é'.repeat(i % 7)} 🚀 ${i % 3 === 0 ? '\ud800' : ''}`,
          keywords: ['a', 'b'],
          metadata: executorObject({ region: i % 2 ? 'eu' : null, version: undefined }),
          startedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
        }),
      ),
      meta: { pagination: { total: 500 } },
    };
    const bytes = jsonBytes(page);
    expect(bytes.length).toBeGreaterThan(8 * 1024 * 3);
    expect(bytes.equals(reference(page))).toBe(true);
    expect(JSON.parse(bytes.toString('utf8'))).toEqual(JSON.parse(JSON.stringify(page)));
  });

  it('leaves out what JSON.stringify leaves out, and refuses what it refuses', () => {
    const value = { a: undefined, b: () => 1, c: Symbol('c'), d: [undefined, () => 1, Symbol('d')], e: { toJSON: () => 'custom' } };
    expect(jsonBytes(value).toString()).toBe(JSON.stringify(value));
    expect(() => jsonBytes(undefined)).toThrow(TypeError);
    const inner: Record<string, unknown> = {};
    const cycle: Record<string, unknown> = { a: { b: inner } };
    inner.c = cycle;
    expect(() => jsonBytes(cycle)).toThrow(TypeError);
    const arrayCycle: unknown[] = [];
    arrayCycle.push({ inner: arrayCycle });
    expect(() => jsonBytes(arrayCycle)).toThrow(TypeError);
    expect(() => jsonBytes({ n: 1n })).toThrow(TypeError);
  });
});
