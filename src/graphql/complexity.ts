/**
 * How a GraphQL document's cost is estimated (@pothos/plugin-complexity): every selected field costs 1, and the
 * selection under a list counts once per item the list may hold. With every paginated list counted at its
 * limit, the cost is an upper bound of the values a response can contain, so the budget of the admission spine (document-limits) is also
 * the cap on a response's size.
 */

/**
 * Lists without a limit argument: a category's catalog applications, a tenant's service users and a service
 * user's tokens. None is tenant data that grows with use; each is counted as this many items.
 */
export const UNBOUNDED_LIST_MULTIPLIER = 20;

/** A page's selection counts once per item the page may return: its limit, or its default. */
export function pageComplexity(bounds: { defaultLimit: number; maxLimit: number }) {
  return (args: { limit?: number | null }) => ({
    field: 1,
    // Clamped: a limit out of range is refused by the resolver with its own message, not as a cost.
    multiplier: Math.min(Math.max(args.limit ?? bounds.defaultLimit, 0), bounds.maxLimit),
  });
}

/** The items of a page: the page's field already multiplied its selection by the limit. */
export const PAGE_ITEMS_COMPLEXITY = { field: 1, multiplier: 1 };
