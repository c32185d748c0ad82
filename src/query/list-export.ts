// What a REST export (rest/export.ts) and a list field (graphql/) agree on, through the request's context: the
// export asks for batches, and a list field that can read its rows for it hands over its reader. Here because
// both sides use it and neither may import the other.

/**
 * What a REST export asks of a list field (context.listExport): batches of `batchRows` rows, and, from a field
 * that can read every property in `properties` for the export itself, the reader (`rows`), which the field sets
 * instead of reading a page. The export then reads the list batch after batch by its keyset, with the field's own
 * conditions and order, each row as the text of its record, which PostgreSQL writes (rest/export.ts): no
 * operation runs per batch.
 */
export interface ListExport {
  batchRows: number;
  /** The row properties the export's records are written from; null when it cannot write them from rows. */
  properties: readonly string[] | null;
  rows?: ListRowReader;
}

/**
 * One part of a column of an exported row, which PostgreSQL writes: a piece of fixed text, or a property's value
 * as JSON (`null` for null), as a CSV cell (RFC 4180: quoted when it holds a quote, a comma or a line break;
 * empty for null; `plain` when its type's text never does), or as text (null stays null). A property reads as its field's serializer writes it (a
 * timestamp in the API's text, an enum by its name), so that PostgreSQL's JSON of it is the page's.
 */
export type RecordPart = { literal: string } | { json: string } | { csv: string; plain?: boolean } | { text: string };

/**
 * A row of an export's batch as bytes (db/copy-binary.ts CopyBinaryTuples): field `i` is
 * `data[starts[i] .. starts[i] + lengths[i])`, the UTF-8 text of the column, or null when its length is -1. Valid
 * only while the row is being handed over.
 */
export interface RowFields {
  readonly data: Buffer;
  readonly starts: Int32Array;
  readonly lengths: Int32Array;
}

/** A list's rows for an export: the field's own question, read from a keyset position on. */
export interface ListRowReader {
  /**
   * Up to `take` rows after the row whose sort keys read `after` (null: from the first), in the list's order,
   * each handed to `onRow` as it arrives: the texts of `columns` (each its parts concatenated), in order, as
   * bytes. Resolves with how many there were and the last one's sort keys' values (where the next batch starts).
   */
  read(
    columns: readonly (readonly RecordPart[])[],
    after: readonly unknown[] | null,
    take: number,
    onRow: (row: RowFields) => void,
  ): Promise<{ rows: number; lastKeys: unknown[] | null }>;
}

/**
 * The extension naming the row property a string field is the JSON text of (`JSON.stringify` of the property's
 * value): a REST export writes the field from the property's text instead of running it.
 */
export const JSON_TEXT_OF = 'jsonTextOf';
