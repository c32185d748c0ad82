/**
 * Set in a REST list route's context when its items are written from the rows (rest/row-writer.ts): the list's
 * `nodes` field hands over how to read its rows here and answers none itself, so no field of any item is
 * executed; everything else of the operation (the root field's checks and reads, the count, the cursor) is.
 */
export interface RowCapture {
  /** The page's rows, as the `nodes` field would have resolved them; set by the first list the operation reaches. */
  rows?: () => Promise<unknown[]>;
}
