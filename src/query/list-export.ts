// What a REST export (rest/export.ts) and a list field (graphql/) agree on, through the request's context: the
// export asks for batches, and a list field that can read its rows for it hands over its reader, whose rows
// arrive as PostgreSQL's binary COPY output (BinaryValue, RowFields; read in db/copy-binary.ts). Here, not in
// db/, because the export writes its records from those bytes and rest/ never imports db/.

/**
 * What a REST export asks of a list field (context.listExport): batches of `batchRows` rows, and, from a field
 * that can read every property in `properties` for the export itself, the reader (`rows`), which the field sets
 * instead of reading a page. The export then reads the list batch after batch by its keyset, with the field's own
 * conditions and order, each row as its properties' values in binary (rest/export.ts): no operation runs per
 * batch.
 */
export interface ListExport {
  batchRows: number;
  /** The row properties the export's records are written from; null when it cannot write them from rows. */
  properties: readonly string[] | null;
  rows?: ListRowReader;
}

/**
 * How a row property's value arrives in binary COPY output: `text` and `enum` (text, an enum's label: UTF-8
 * bytes), `timestamp` (timestamptz: microseconds since 2000 as a 64-bit integer), `boolean` (one byte), `int4` (a 32-bit
 * integer), `jsonb` (a version byte, then the value's text). The export writes each as its field's text.
 */
export type BinaryValue = 'text' | 'enum' | 'timestamp' | 'boolean' | 'int4' | 'jsonb';

/**
 * A row of an export's batch as bytes (db/copy-binary.ts CopyBinaryTuples): field `i` is
 * `data[starts[i] .. starts[i] + lengths[i])`, the value as PostgreSQL sends it (BinaryValue), or null when its
 * length is -1. Valid only while the row is being handed over.
 */
export interface RowFields {
  readonly data: Buffer;
  readonly starts: Int32Array;
  readonly lengths: Int32Array;
}

/** A list's rows for an export: the field's own question, read from a keyset position on. */
export interface ListRowReader {
  /** Rows per batch when the reader's output arrives whole (db/copy-binary.ts WHOLE_BATCH_ROWS); undefined when it streams. */
  batchRows?: number | undefined;
  /** How each property the export asked for (ListExport.properties) arrives. */
  valueOf(property: string): BinaryValue;
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

/**
 * The extension naming the row property a string field is the JSON text of (`JSON.stringify` of the property's
 * value): a REST export writes the field from the property's text instead of running it.
 */
export const JSON_TEXT_OF = 'jsonTextOf';
