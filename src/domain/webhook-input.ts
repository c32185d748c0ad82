import { z } from 'zod';
import { targetProblem, type GuardOptions } from './ssrf-guard.js';
import { WEBHOOK_EVENT_TYPES } from './webhook-messages.js';
import type { FieldProblem } from './problems.js';
import { zodProblems } from './sync-reports.js';

// The bodies of the webhook endpoint writes (`POST /webhooks`, `PATCH /webhooks/{id}`, and the GraphQL
// mutations, which map their arguments to the same bodies). The URL is checked by the SSRF guard too.

/** The shape the SSRF guard's first check (urlProblem) asks for, so that the document says it too. */
const ABSOLUTE_HTTP_URL = /^[Hh][Tt][Tt][Pp][Ss]?:\/\/[^\s#]+$/;
const url = z.string().trim().min(1, 'must not be empty').max(2048).meta({
  format: 'uri',
  pattern: ABSOLUTE_HTTP_URL.source,
  description:
    'An absolute https URL (http too where the server allows private targets), without credentials or #fragment; its host must not resolve to a loopback, private, link-local or metadata address.',
});
const description = z.string().max(500);
const eventTypes = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .max(WEBHOOK_EVENT_TYPES.length)
  .refine((types) => new Set(types).size === types.length, 'must not repeat a type')
  .meta({ uniqueItems: true });

const createBody = z.strictObject({
  url,
  description: description.optional(),
  event_types: eventTypes.optional().describe('Event types to send; empty or left out: every type.'),
  enabled: z.boolean().optional(),
});

/** A JSON Merge Patch: members left out stay; null empties description and event_types (every type). */
const patchBody = z.strictObject({
  url: url.optional(),
  description: description.nullable().optional(),
  event_types: eventTypes.nullable().optional(),
  enabled: z.boolean().optional(),
});

export const WEBHOOK_BODY_SCHEMAS = {
  create: z.toJSONSchema(createBody, { io: 'input' }),
  patch: z.toJSONSchema(patchBody, { io: 'input' }),
};

/** A checked endpoint, as the data layer stores it. */
export interface EndpointInput {
  url: string;
  description?: string | undefined;
  eventTypes?: readonly string[] | undefined;
  enabled?: boolean | undefined;
}

export type EndpointPatch = Partial<{ url: string; description: string; eventTypes: readonly string[]; enabled: boolean }>;

type Parsed<T> = { value: T } | { problems: FieldProblem[] };

/** The body's problems, the URL's (SSRF guard) among them, all at once; or the value. */
async function checked<T>(parsed: z.ZodSafeParseResult<unknown>, body: unknown, value: () => T, guard: GuardOptions): Promise<Parsed<T>> {
  const problems = parsed.success ? [] : zodProblems(parsed.error);
  const rawUrl =
    typeof body === 'object' && body !== null && typeof (body as { url?: unknown }).url === 'string'
      ? (body as { url: string }).url.trim()
      : undefined;
  if (rawUrl !== undefined && !problems.some((p) => p.field === 'url')) {
    const problem = await targetProblem(rawUrl, guard);
    if (problem) problems.push({ field: 'url', message: problem });
  }
  return problems.length > 0 ? { problems } : { value: value() };
}

export async function parseCreateWebhookEndpoint(body: unknown, guard: GuardOptions): Promise<Parsed<EndpointInput>> {
  const parsed = createBody.safeParse(body);
  return checked(
    parsed,
    body,
    () => {
      const data = parsed.data!;
      return { url: data.url, description: data.description, eventTypes: data.event_types, enabled: data.enabled };
    },
    guard,
  );
}

export async function parseWebhookEndpointPatch(body: unknown, guard: GuardOptions): Promise<Parsed<EndpointPatch>> {
  const parsed = patchBody.safeParse(body);
  return checked(
    parsed,
    body,
    () => {
      const data = parsed.data!;
      const patch: EndpointPatch = {};
      if (data.url !== undefined) patch.url = data.url;
      if (data.description !== undefined) patch.description = data.description ?? '';
      if (data.event_types !== undefined) patch.eventTypes = data.event_types ?? [];
      if (data.enabled !== undefined) patch.enabled = data.enabled;
      return patch;
    },
    guard,
  );
}

/**
 * Every problem of a body, for the REST body check (the same parser the mutation uses). A caller who may not
 * manage webhooks is refused by the mutation (403) before anything of the body is looked at, DNS included.
 */
export async function webhookBodyProblems(
  kind: 'create' | 'patch',
  body: unknown,
  context: { viewer: { permissions: ReadonlySet<string> } | null; webhooks: GuardOptions },
): Promise<readonly FieldProblem[]> {
  if (!context.viewer?.permissions.has('webhooks:manage')) return [];
  const guard = context.webhooks;
  const result = kind === 'create' ? await parseCreateWebhookEndpoint(body, guard) : await parseWebhookEndpointPatch(body, guard);
  return 'problems' in result ? result.problems : [];
}
