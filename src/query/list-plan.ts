// A list's read plan, and how it reaches whoever executed the list's operation. A root list field checks its
// caller and arguments and answers its page: the plan of the list's reads for this request, each run at most
// once and only when asked (its rows, its count, and for a list that can read them so, all its rows by keyset
// for an export). GraphQL asks it through the page's fields. An execution whose root value is a
// ListPlanRequest (a REST list, an export) is handed the page's plan as well (graphql/list.ts): it then writes
// the items from the rows itself (rest/row-writer.ts) or reads every row for an export (rest/export.ts).

/** A list's reads for one request, as its root field planned them. `Reader`: how an export reads all its rows. */
export interface ListPlan<Reader = unknown> {
  /** The page's rows, read once (the rows the page's `nodes` answers). */
  nodes(): Promise<unknown[]>;
  /** All the list's rows by keyset, as binary COPY output (db/binary-rows.ts ListRowReader); absent when it has no such read. */
  exportRows?: Reader | undefined;
}

/** The root value of an execution that asks for the plan of the list its root field answers. */
export class ListPlanRequest<Reader = unknown> {
  plan: ListPlan<Reader> | undefined;
}

/**
 * The extension naming the row property a string field is the JSON text of (`JSON.stringify` of the property's
 * value): a REST export writes the field from the property's text instead of running it.
 */
export const JSON_TEXT_OF = 'jsonTextOf';
