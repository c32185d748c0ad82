import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { errorText } from './api';
import { formatTime, formatUtc } from './format';
import type { CombinedError } from 'urql';

// Small pieces every page uses: error and status messages, a confirmation dialog, a copy button, formats.

export function ErrorMessage({ error }: { error: CombinedError | Error | string | null | undefined }) {
  const text = errorText(error);
  return text ? (
    <p className="error" role="alert">
      {text}
    </p>
  ) : null;
}

/** The problems a form's own checks found, each on a line, announced as they appear. */
export function ProblemList({ problems }: { problems: readonly string[] }) {
  return problems.length > 0 ? (
    <ul className="error" role="alert">
      {problems.map((problem) => (
        <li key={problem}>{problem}</li>
      ))}
    </ul>
  ) : null;
}

export function Loading() {
  return <p aria-live="polite">Loading…</p>;
}

/** A button that asks before it acts, in a modal dialog (keyboard: Tab between the buttons, Escape cancels). */
export function ConfirmButton({
  label,
  accessibleLabel,
  question,
  confirmLabel,
  onConfirm,
  className = 'danger',
}: {
  label: string;
  /** The button's name when its visible label needs the row it stands in (`Remove` → `Remove ana@example.com`). */
  accessibleLabel?: string;
  question: string;
  confirmLabel: string;
  onConfirm: () => unknown;
  className?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [busy, setBusy] = useState(false);
  return (
    <>
      <button type="button" className={className} aria-label={accessibleLabel} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <p id={titleId}>{question}</p>
        <div className="actions">
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await onConfirm();
              } finally {
                setBusy(false);
                dialog.current?.close();
              }
            }}
          >
            {confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** A secret shown once: the value in a read-only field, a copy button, and the warning that it will not come back. */
export function SecretOnce({ label, value, note }: { label: string; value: string; note: string }) {
  const id = useId();
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret" role="status">
      <label htmlFor={id}>{label}</label>
      <div className="row">
        <input id={id} readOnly value={value} className="mono" onFocus={(e) => e.currentTarget.select()} />
        <button
          type="button"
          onClick={async () => {
            await navigator.clipboard.writeText(value);
            setCopied(true);
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      <p className="note">{note}</p>
    </div>
  );
}

/**
 * An application's logo, beside its name (so `alt=""`: the name says it already). Only a path on this server is
 * loaded (the catalog's are /logos/<slug>.svg): the console's CSP allows images from nowhere else, and it makes
 * no request that leaves the server. Any other logo_url keeps the place empty.
 */
export function AppLogo({ url, size = 24 }: { url: string | null | undefined; size?: number }) {
  const onThisServer = url?.startsWith('/') === true && !url.startsWith('//');
  if (!onThisServer) {
    return <span className="app-logo" style={{ width: size, height: size }} aria-hidden="true" />;
  }
  return <img className="app-logo" src={url!} alt="" width={size} height={size} decoding="async" />;
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${status}`}>{status.replace('_', ' ')}</span>;
}

export {
  DAY_MS,
  durationOf,
  endOfLocalDay,
  formatDuration,
  formatTime,
  formatUtc,
  localDate,
  startOfLocalDay,
  TIME_ZONE,
} from './format';

/** An instant shown in local time, with UTC on hover. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <>—</>;
  return (
    <time dateTime={iso} title={formatUtc(iso)}>
      {formatTime(iso)}
    </time>
  );
}

/**
 * Text as it was sent (JSON, an HTTP answer), kept as written in a box that scrolls on its own: a named region
 * that takes the focus, so that a keyboard scrolls it too.
 */
export function CodeBlock({ labelledBy, children }: { labelledBy: string; children: string }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a box that scrolls must take the focus for a keyboard to scroll it (WCAG 2.1.1, axe's scrollable-region-focusable)
    <section className="code-block" tabIndex={0} aria-labelledby={labelledBy}>
      <pre>{children}</pre>
    </section>
  );
}

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · Console`;
  }, [title]);
  return (
    <header className="page-header">
      <h1>{title}</h1>
      {children ? <div className="actions">{children}</div> : null}
    </header>
  );
}

/** Calls `action` at most once per `ms`, trailing: live events refresh a list without a request per event. */
export function useThrottled(action: () => void, ms: number): () => void {
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const latest = useRef(action);
  latest.current = action;
  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );
  return () => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      latest.current();
    }, ms);
  };
}

/** How long typing pauses before a search box queries the API (one request per pause, not per key). */
export const SEARCH_DELAY_MS = 250;

/** `value` once it has stayed unchanged for `ms`: a search typed key by key asks the server once per pause. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** Where a page of a list ends, as the API's page types say (`pageInfo`). */
export interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

/**
 * The pages of a list read by cursor: the `after` of each page walked so far, so that Previous goes back the
 * way Next came. Cursor pages reach the whole list (an offset stops at the API's offset limit) and do not
 * shift when new rows arrive at the top. `scope` is what shapes the list (its filters): a cursor is bound to
 * it, so a new scope starts again at the first page.
 */
export function useCursorPages(scope: unknown): CursorPages {
  const key = JSON.stringify(scope);
  const [walked, setWalked] = useState<{ key: string; cursors: readonly string[] }>({ key, cursors: [] });
  // Forgotten, not only hidden: going back to an earlier scope starts at its first page too.
  if (walked.key !== key) setWalked({ key, cursors: [] });
  const cursors = walked.key === key ? walked.cursors : [];
  const after = cursors.at(-1) ?? null;
  return {
    /** The `after` of the page shown: null for the first page. */
    after,
    page: cursors.length + 1,
    hasPrevious: cursors.length > 0,
    // The same end cursor twice (Next pressed again before the next page loaded) is one step.
    next: (endCursor: string) => {
      if (endCursor !== after) setWalked({ key, cursors: [...cursors, endCursor] });
    },
    previous: () => setWalked({ key, cursors: cursors.slice(0, -1) }),
    first: () => setWalked({ key, cursors: [] }),
  };
}

/** A list's pages as a pager moves through them. */
export interface CursorPages {
  /** The `after` of the page shown: null for the first page. */
  after: string | null;
  /** The page shown, from 1. */
  page: number;
  hasPrevious: boolean;
  next: (endCursor: string) => void;
  previous: () => void;
  first: () => void;
}

/** First, Previous and Next over a list's cursor pages, and where the page shown is in the whole list. */
export function Pager({
  pages,
  pageInfo,
  limit,
  total,
  label,
}: {
  pages: CursorPages;
  pageInfo: PageInfo;
  limit: number;
  total: number;
  label: string;
}) {
  const count = Math.max(pages.page, Math.ceil(total / limit));
  const nextCursor = pageInfo.hasNextPage ? pageInfo.endCursor : null;
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" disabled={pages.page === 1} onClick={pages.first}>
        First
      </button>
      <button type="button" disabled={!pages.hasPrevious} onClick={pages.previous}>
        Previous
      </button>
      <span aria-live="polite">
        Page {pages.page} of {count} ({total} in all)
      </span>
      <button type="button" disabled={nextCursor === null} onClick={() => nextCursor && pages.next(nextCursor)}>
        Next
      </button>
    </nav>
  );
}
