import { useLocation, useSearch } from 'wouter';
import type { CursorPages } from './ui';

/** What a list shows, kept in the URL's query: its parameters, ways to change them, and its cursor pages. */
export interface UrlView {
  params: URLSearchParams;
  /** Sets (a value) or removes (null) parameters; `push` makes a step Back returns from, else the entry is replaced. */
  set: (changes: Record<string, string | null>, how: { push: boolean }) => void;
  /** A new filter or sort: its first page, since a cursor belongs to the list it came from. */
  refine: (changes: Record<string, string | null>, how?: { push: boolean }) => void;
  /** The pages walked, as `page` and `after` in the URL: each Next and Previous is a step of the history. */
  pages: CursorPages;
}

function previousCursors(storageKey: string): Record<string, string> {
  try {
    return JSON.parse(sessionStorage.getItem(storageKey) ?? '{}') as Record<string, string>;
  } catch {
    return {};
  }
}

/**
 * A list's view kept in the URL (`?status=failed&page=2&after=…`): a reload keeps it, a copied link opens it,
 * and Back and Forward move through the pages walked. `storageKey` names where this tab remembers, by a page's
 * own `after`, the `after` of the page before it, so that Previous goes back the way Next came; a page opened
 * from a link knows only its own cursor, so its Previous is First's.
 */
export function useUrlView(storageKey: string): UrlView {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = new URLSearchParams(search);
  const set = (changes: Record<string, string | null>, how: { push: boolean }) => {
    const next = new URLSearchParams(search);
    for (const [name, value] of Object.entries(changes)) {
      if (value) next.set(name, value);
      else next.delete(name);
    }
    const query = next.toString();
    if (query === params.toString()) return;
    navigate(query ? `${location}?${query}` : location, { replace: !how.push });
  };
  const refine = (changes: Record<string, string | null>, how = { push: false }) => set({ ...changes, page: null, after: null }, how);
  const after = params.get('after');
  const page = after ? Math.max(2, Number.parseInt(params.get('page') ?? '', 10) || 2) : 1;
  const previousAfter = after ? previousCursors(storageKey)[after] : undefined;
  const pages: CursorPages = {
    after,
    page,
    hasPrevious: page > 1,
    next: (endCursor) => {
      if (endCursor === after) return;
      sessionStorage.setItem(storageKey, JSON.stringify({ ...previousCursors(storageKey), [endCursor]: after ?? '' }));
      set({ page: String(page + 1), after: endCursor }, { push: true });
    },
    previous: () => {
      if (page <= 2 || !previousAfter) set({ page: null, after: null }, { push: true });
      else set({ page: String(page - 1), after: previousAfter }, { push: true });
    },
    first: () => set({ page: null, after: null }, { push: true }),
  };
  return { params, set, refine, pages };
}
