import { z } from 'zod';
import { ConnectionStatus, ConnectionVia } from '../generated/prisma/enums.js';
import { MAX_ID_LENGTH } from '../prefixed-ids.js';
import type { FieldProblem } from './problems.js';
import { zodProblems } from './sync-reports.js';

// The shapes of the connection write bodies. Which metadata/settings members are allowed depends on the
// application's kind, which only the database knows: the data layer checks those after reading it.

const CONNECTION_NAME_MAX = 200;
const CONNECTION_DESCRIPTION_MAX = 2000;

const name = z.string().trim().min(1, 'must not be empty').max(CONNECTION_NAME_MAX);
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

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, member]) => member !== undefined)) as T;
}

/** JSON Schemas of the connection write bodies, for the OpenAPI document. */
export const CONNECTION_BODY_SCHEMAS = {
  create: z.toJSONSchema(createBody, { io: 'input' }),
  patch: z.toJSONSchema(patchBody, { io: 'input' }),
};
