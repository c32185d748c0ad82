import { z } from 'zod';
import { ConnectionStatus, ConnectionVia } from '../generated/prisma/enums.js';
import { MAX_ID_LENGTH } from '../prefixed-ids.js';
import { kindOfCategory } from './category-kinds.js';
import { connectionMemberProblems, containerJsonSchema, defaultSettings, mergePatch, type ConnectionKind } from './connection-members.js';
import type { FieldProblem } from './problems.js';
import { zodProblems } from './sync-reports.js';

// The shapes of the connection write bodies. Which metadata/settings members are allowed depends on the
// application's kind, which only the catalog knows: the checks here take the catalog as a lookup, so the
// surfaces and the data layer ask the same rules.

const CONNECTION_NAME_MAX = 200;
const CONNECTION_DESCRIPTION_MAX = 2000;

const name = z.string().trim().min(1, 'must not be empty').max(CONNECTION_NAME_MAX).meta({ pattern: '\\S' });
const description = z.string().trim().max(CONNECTION_DESCRIPTION_MAX);
const members = z.record(z.string(), z.unknown());

export interface CreateConnectionInput {
  applicationId: string;
  /** Default: the application's name. */
  name?: string;
  /** Default: the application's description. */
  description?: string;
  /** Default: `manual`. */
  via?: ConnectionVia;
  metadata?: Record<string, unknown>;
  /** Members left out get their defaults. */
  settings?: Record<string, unknown>;
}

/** A JSON Merge Patch (RFC 7396) of a connection: `null` removes a member (or empties `description`). */
export interface ConnectionPatch {
  name?: string;
  description?: string | null;
  status?: ConnectionStatus;
  metadata?: Record<string, unknown> | null;
  settings?: Record<string, unknown> | null;
}

const createBody = z.strictObject({
  application_id: z.string().min(1).max(MAX_ID_LENGTH),
  name: name.optional(),
  description: description.optional(),
  via: z.enum(ConnectionVia).optional(),
  metadata: members.optional(),
  settings: members.optional(),
});

const patchBody = z.strictObject({
  name: name.optional(),
  description: description.nullable().optional(),
  status: z.enum(ConnectionStatus).optional(),
  metadata: members.nullable().optional(),
  settings: members.nullable().optional(),
});

/** The body of `POST /connected`, snake_case as REST sends it. */
export function parseCreateConnection(body: unknown): { input: CreateConnectionInput } | { problems: FieldProblem[] } {
  const parsed = createBody.safeParse(body);
  if (!parsed.success) return { problems: zodProblems(parsed.error) };
  const { application_id: applicationId, ...rest } = parsed.data;
  return { input: dropUndefined({ applicationId, ...rest }) };
}

/** The body of `PATCH /connected/{id}` (a merge patch). */
export function parseConnectionPatch(body: unknown): { patch: ConnectionPatch } | { problems: FieldProblem[] } {
  const parsed = patchBody.safeParse(body);
  return parsed.success ? { patch: dropUndefined(parsed.data) } : { problems: zodProblems(parsed.error) };
}

/**
 * The catalog as the input checks read it: the category of an application, or null when the catalog has no
 * application with that id.
 */
export type ApplicationCategoryLookup = (applicationId: string) => Promise<string | null>;

/**
 * The problems of a new connection that need the catalog: an unknown application (`categoryId` null), and the
 * metadata and settings members its kind does not take or types wrongly (after the settings defaults). For an
 * unknown application the members are judged against every kind's, so a body wrong in several ways hears of all.
 */
export function catalogProblems(
  categoryId: string | null,
  applicationId: string,
  input: { metadata?: unknown; settings?: unknown },
): FieldProblem[] {
  const kind: ConnectionKind | null | 'any' = categoryId === null ? 'any' : kindOfCategory(categoryId);
  const problems: FieldProblem[] =
    categoryId === null ? [{ field: 'application_id', message: `no application ${applicationId} in the catalog` }] : [];
  const metadata = input.metadata ?? {};
  const settings = mergePatch(defaultSettings(kind), input.settings ?? {});
  problems.push(...connectionMemberProblems(kind, { metadata, settings }));
  return problems;
}

/**
 * Every problem of a `POST /connected` body (as REST sends it; GraphQL arguments are mapped to it): its shape
 * by the schema above, and, when that has problems too, those that need the catalog. The REST body check and
 * the resolver both ask here, so a body wrong in both ways gets one 400 listing all of it. A body whose shape
 * is right costs no lookup here: the write checks the catalog in its own transaction.
 */
export async function createConnectionProblems(body: unknown, applicationCategory: ApplicationCategoryLookup): Promise<FieldProblem[]> {
  const parsed = parseCreateConnection(body);
  if (!('problems' in parsed)) return [];
  const problems = [...parsed.problems];
  const applicationId = isObject(body) ? body.application_id : undefined;
  if (typeof applicationId !== 'string' || problems.some((p) => p.field === 'application_id')) return problems;
  const categoryId = await applicationCategory(applicationId);
  // Members whose container already has a shape problem (not an object, say) are not judged twice.
  const judged = (container: 'metadata' | 'settings') => !problems.some((p) => p.field === container);
  const members = {
    metadata: judged('metadata') ? (body as Record<string, unknown>).metadata : undefined,
    settings: judged('settings') ? (body as Record<string, unknown>).settings : undefined,
  };
  const known = new Set(problems.map((p) => `${p.field}\0${p.message}`));
  for (const problem of catalogProblems(categoryId, applicationId, members)) {
    if (!known.has(`${problem.field}\0${problem.message}`)) problems.push(problem);
  }
  return problems;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, member]) => member !== undefined)) as T;
}

/** JSON Schemas of the connection write bodies, for the OpenAPI document. */
export const CONNECTION_BODY_SCHEMAS = {
  create: withKindMembers(z.toJSONSchema(createBody, { io: 'input' }), false),
  patch: withKindMembers(z.toJSONSchema(patchBody, { io: 'input' }), true),
};

/** The body schema with `metadata` and `settings` described member by member, as the kinds take them. */
function withKindMembers(schema: Record<string, unknown>, patch: boolean): Record<string, unknown> {
  const properties = { ...(schema.properties as Record<string, unknown>) };
  for (const container of ['metadata', 'settings'] as const) {
    const members = containerJsonSchema(container, patch);
    properties[container] = patch ? { anyOf: [members, { type: 'null' }] } : members;
  }
  return { ...schema, properties };
}
