// What a REST export (rest/export.ts) and a list field (graphql/) agree on, through the request's context: the
// export asks for batches, and a list field that can read its rows for it hands over its reader. Here because
// both sides use it and neither may import the other.

/**
 * What a REST export asks of a list field (context.listExport): batches of `batchRows` rows, and, from a field
 * that can read its rows for the export itself, the reader (`rows`), which the field sets instead of reading a
 * page. The export then reads the list batch after batch by its keyset, with the field's own conditions, order
 * and properties, and shapes each REST record from the row (rest/export.ts): no operation runs per batch.
 */
export interface ListExport {
  batchRows: number;
  /** Whether the export shapes records from rows (it does unless a field it exports is an object). */
  readsRows: boolean;
  rows?: ListRowReader;
}

/** A list's rows for an export: the field's own question, read from a keyset position on. */
export interface ListRowReader {
  /**
   * Up to `take` rows after the row whose sort keys read `after` (null: from the first). The properties in
   * `packed` come as one JSON array (text) in the row's `PACKED_PROPERTIES` member, in that order; the other
   * properties the field reads are the row's members, as a page's rows hold them.
   */
  read(packed: readonly string[], after: readonly unknown[] | null, take: number): Promise<Record<string, unknown>[]>;
  /** Which properties `read` can pack. */
  packable(property: string): boolean;
  /** A row's sort keys' values: where the next batch starts. */
  keyValues(row: Record<string, unknown>): unknown[];
}

/** The row member holding a ListRowReader's packed properties. */
export const PACKED_PROPERTIES = '__packed';
