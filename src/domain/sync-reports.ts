import { z } from 'zod';
import type { SyncStatus } from '../generated/prisma/enums.js';
import { LEASE_SECONDS } from './sync-lifecycle.js';
import type { FieldProblem } from './problems.js';

// What an engine may write on a run: the summary members each status may hold (the spec's field-condition
// table), the diff and the checksum. Requests are parsed here once; the data layer takes the parsed values.

const count = z
  .int()
  .min(0)
  .max(2 ** 31 - 1);

const SUMMARY_MEMBERS = {
  queued: z.boolean(),
  estimated_items: count,
  processed: count,
  in_progress: z.boolean(),
  inserted: count,
  updated: count,
  deleted: count,
  errors: z.array(z.string().min(1).max(1000)).max(100),
} as const;
type SummaryKey = keyof typeof SUMMARY_MEMBERS;

/**
 * The summary members a run of each status may hold. The spec's table, plus `estimated_items` while in
 * progress (engines refine their estimate as they go).
 */
export const SYNC_SUMMARY_KEYS: Readonly<Record<SyncStatus, readonly SummaryKey[]>> = {
  pending: ['queued', 'estimated_items'],
  in_progress: ['processed', 'in_progress', 'estimated_items'],
  success: ['processed', 'inserted', 'updated', 'deleted'],
  failed: ['errors', 'processed'],
};

function summarySchema<S extends SyncStatus>(status: S) {
  const shape: Partial<Record<SummaryKey, z.ZodOptional<z.ZodType>>> = {};
  for (const key of SYNC_SUMMARY_KEYS[status]) shape[key] = SUMMARY_MEMBERS[key].optional();
  return z.strictObject(shape);
}

type SyncSummary = { queued?: boolean; estimated_items?: number; processed?: number; in_progress?: boolean } & {
  inserted?: number;
  updated?: number;
  deleted?: number;
  errors?: string[];
};
export type ProgressSummary = Pick<SyncSummary, 'processed' | 'in_progress' | 'estimated_items'>;
type SuccessSummary = Pick<SyncSummary, 'processed' | 'inserted' | 'updated' | 'deleted'>;
type FailedSummary = Pick<SyncSummary, 'errors' | 'processed'>;

const ids = z.array(z.string().min(1).max(200)).max(10_000);
const diffSchema = z.strictObject({ added: ids.optional(), changed: ids.optional(), removed: ids.optional() });
type SyncDiff = z.infer<typeof diffSchema>;

const CHECKSUM_KEYS = ['b', 'f', 'ac', 'ap', 'ls', 'file'] as const;
type SyncChecksum = Record<(typeof CHECKSUM_KEYS)[number], string>;
const checksumValue = z.string().max(256);
/** Members left out are stored as empty strings, as the spec observes. */
const checksumSchema = z
  .strictObject(
    Object.fromEntries(CHECKSUM_KEYS.map((key) => [key, checksumValue.optional()])) as Record<
      (typeof CHECKSUM_KEYS)[number],
      z.ZodOptional<typeof checksumValue>
    >,
  )
  .transform((value): SyncChecksum => {
    const filled = {} as SyncChecksum;
    for (const key of CHECKSUM_KEYS) filled[key] = value[key] ?? '';
    return filled;
  });

const leaseSecondsSchema = z.int().min(LEASE_SECONDS.min).max(LEASE_SECONDS.max);

/** How a run ended, as the engine reports it; `finished_at` is always the server's clock. */
export type SyncOutcome =
  | { status: 'success'; summary: SuccessSummary; fileUrl?: string | null; diff?: SyncDiff; checksum?: SyncChecksum }
  | { status: 'failed'; errorMessage: string; summary: FailedSummary };

/** A PATCH on a run: progress (summary only) or its outcome. */
export type SyncReport = { kind: 'progress'; summary: ProgressSummary } | { kind: 'finish'; outcome: SyncOutcome };

const successReport = z.strictObject({
  status: z.literal('success'),
  summary: summarySchema('success').default({}),
  file_url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .nullable()
    .optional(),
  diff: diffSchema.optional(),
  checksum: checksumSchema.optional(),
});
const failedReport = z.strictObject({
  status: z.literal('failed'),
  error_message: z.string().trim().min(1, 'must not be empty').max(2000),
  summary: summarySchema('failed').default({}),
});
const progressReport = z.strictObject({ summary: summarySchema('in_progress') });

/** Zod issues as field problems; an unknown key is one problem per key. */
export function zodProblems(error: z.ZodError, prefix = ''): FieldProblem[] {
  const at = (path: readonly PropertyKey[]) => [prefix, ...path.map(String)].filter(Boolean).join('.') || '(body)';
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ field: at([...issue.path, key]), message: 'unknown member' }))
      : [{ field: at(issue.path), message: issue.message }],
  );
}

/**
 * Parses the body of a run report (`PATCH /syncs/{id}`): `{summary}` is progress, `{status, …}` the outcome.
 * Returns every problem at once when it is neither.
 */
export function parseSyncReport(body: unknown): { report: SyncReport } | { problems: FieldProblem[] } {
  const status = typeof body === 'object' && body !== null && 'status' in body ? (body as { status: unknown }).status : undefined;
  if (status === undefined) {
    const progress = progressReport.safeParse(body);
    return progress.success
      ? { report: { kind: 'progress', summary: progress.data.summary as ProgressSummary } }
      : { problems: zodProblems(progress.error) };
  }
  if (status === 'success') {
    const parsed = successReport.safeParse(body);
    if (!parsed.success) return { problems: zodProblems(parsed.error) };
    const { summary, file_url: fileUrl, diff, checksum } = parsed.data;
    return {
      report: {
        kind: 'finish',
        outcome: {
          status: 'success',
          summary: summary as SuccessSummary,
          ...(fileUrl === undefined ? {} : { fileUrl }),
          ...(diff === undefined ? {} : { diff }),
          ...(checksum === undefined ? {} : { checksum }),
        },
      },
    };
  }
  if (status === 'failed') {
    const parsed = failedReport.safeParse(body);
    if (!parsed.success) return { problems: zodProblems(parsed.error) };
    return {
      report: {
        kind: 'finish',
        outcome: { status: 'failed', errorMessage: parsed.data.error_message, summary: parsed.data.summary as FailedSummary },
      },
    };
  }
  return { problems: [{ field: 'status', message: 'must be "success" or "failed" (leave it out to report progress)' }] };
}

/** The body of `POST /syncs`: which connection to run now. */
const triggerBody = z.strictObject({
  connection_id: z.string().min(1).max(64),
  estimated_items: count.optional(),
});
type TriggerBody = z.infer<typeof triggerBody>;

export function parseTriggerBody(body: unknown): { trigger: TriggerBody } | { problems: FieldProblem[] } {
  const parsed = triggerBody.safeParse(body);
  return parsed.success ? { trigger: parsed.data } : { problems: zodProblems(parsed.error) };
}

/** The body of `POST /syncs/claim`: optional lease length and narrowing to one connection or application. */
const claimBody = z.strictObject({
  lease_seconds: leaseSecondsSchema.optional(),
  connection_id: z.string().min(1).max(64).optional(),
  application_slug: z.string().min(1).max(100).optional(),
});
type ClaimBody = z.infer<typeof claimBody>;

export function parseClaimBody(body: unknown): { claim: ClaimBody } | { problems: FieldProblem[] } {
  const parsed = claimBody.safeParse(body);
  return parsed.success ? { claim: parsed.data } : { problems: zodProblems(parsed.error) };
}

/** JSON Schemas of the write bodies, for the OpenAPI document (what the parsers above accept). */
export const SYNC_BODY_SCHEMAS = {
  trigger: z.toJSONSchema(triggerBody, { io: 'input' }),
  claim: z.toJSONSchema(claimBody, { io: 'input' }),
  report: z.toJSONSchema(z.union([progressReport, successReport, failedReport]), { io: 'input' }),
};
