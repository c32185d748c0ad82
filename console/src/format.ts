// Times, dates and durations as a person reads them: in the browser's time zone and language.

/** The browser's time zone: every time the console shows, and every date it reads, is in it. */
export const TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** How an instant is shown: in the browser's language too, so that it reads like the date fields' own format. */
export const TIME_FORMAT: Readonly<Intl.DateTimeFormatOptions> = {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
};

const localDateTime = new Intl.DateTimeFormat(undefined, TIME_FORMAT);

/** An instant in the browser's time zone, with the zone's name ("Nov 29, 2026, 10:04:05 AM EST"). */
export function formatTime(iso: string | null | undefined): string {
  return iso ? localDateTime.format(new Date(iso)) : '—';
}

/** The same instant in UTC, as the API writes it ("2026-11-29 15:04:05 UTC"). */
export function formatUtc(iso: string): string {
  return `${new Date(iso).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A time's day in the browser's time zone, as a date field's value (YYYY-MM-DD). */
export function localDate(time: number | Date): string {
  const date = new Date(time);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** Where a date field's day (YYYY-MM-DD) starts in the browser's time zone. */
export function startOfLocalDay(date: string): Date {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return new Date(year, month - 1, day);
}

/** The first instant after a date field's day, in the browser's time zone (days are not always 24 h long). */
export function endOfLocalDay(date: string): Date {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return new Date(year, month - 1, day + 1);
}

/** A duration for a person: "850 ms", "59.9 s", "1 min 0 s", "2 h 5 min"; each unit rounded once, so never "60 s". */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (Math.round(ms) < 1000) return `${Math.round(ms)} ms`;
  const tenths = Math.round(ms / 100);
  if (tenths < 600) return `${(tenths / 10).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  const minutes = Math.round(ms / 60_000);
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function durationOf(startedAt: string, finishedAt: string | null | undefined): number | null {
  return finishedAt ? new Date(finishedAt).getTime() - new Date(startedAt).getTime() : null;
}

/** The count axis: 0 to a round top at or above `max`, in 1, 2 or 5 times a power of ten, about four steps. */
export function countTicks(max: number): number[] {
  const rough = Math.max(1, max) / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(1, [1, 2, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= rough)!);
  const top = Math.max(step, Math.ceil(max / step) * step);
  return Array.from({ length: top / step + 1 }, (_, index) => index * step);
}

/** A day in milliseconds. */
export const DAY_MS = 24 * 60 * 60 * 1000;
