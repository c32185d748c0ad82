// The rows of a list read as PostgreSQL's binary COPY output (read in ./copy-binary.ts), as a list's plan hands
// them to an export (query/list-plan.ts): types only. The one module of db/ that rest/ imports, type-only, for
// it writes the export's records from these bytes (rest/export-lines.ts); test/architecture.test.ts names it.

/**
 * How a row property's value arrives in binary COPY output: `text` and `enum` (text, an enum's label: UTF-8
 * bytes), `timestamp` (timestamptz: microseconds since 2000 as a 64-bit integer), `boolean` (one byte), `int4` (a 32-bit
 * integer), `jsonb` (a version byte, then the value's text). The export writes each as its field's text.
 */
export type BinaryValue = 'text' | 'enum' | 'timestamp' | 'boolean' | 'int4' | 'jsonb';

/**
 * A row of an export's batch as bytes (./copy-binary.ts CopyBinaryTuples): field `i` is
 * `data[starts[i] .. starts[i] + lengths[i])`, the value as PostgreSQL sends it (BinaryValue), or null when its
 * length is -1. Valid only while the row is being handed over.
 */
export interface RowFields {
  readonly data: Buffer;
  readonly starts: Int32Array;
  readonly lengths: Int32Array;
}

/** A list's rows for an export: the field's own question (its conditions and order), read from a keyset position on. */
export interface ListRowReader {
  /** Rows per batch when the reader's output arrives whole (./copy-binary.ts WHOLE_BATCH_ROWS); undefined when it streams. */
  batchRows?: number | undefined;
  /** How a row property arrives; undefined for a property the reader cannot read (the export then runs the operation). */
  valueOf(property: string): BinaryValue | undefined;
  /**
   * Up to `take` rows after the row whose sort keys read `after` (null: from the first), in the list's order,
   * each handed to `onRow` as it arrives: the values of `properties`, in order, as PostgreSQL sends them
   * (valueOf). Resolves with how many there were and the last one's sort keys' values (where the next batch
   * starts). `room` says when the consumer has no room for more: the read then waits.
   */
  read(
    properties: readonly string[],
    after: readonly unknown[] | null,
    take: number,
    onRow: (row: RowFields) => void,
    room?: () => Promise<void> | null,
  ): Promise<{ rows: number; lastKeys: unknown[] | null }>;
}
