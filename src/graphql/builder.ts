import SchemaBuilder from '@pothos/core';
import ComplexityPlugin from '@pothos/plugin-complexity';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import PrismaPlugin from '@pothos/plugin-prisma';
import ScopeAuthPlugin, { type AuthFailure, AuthScopeFailureType } from '@pothos/plugin-scope-auth';
import { lacksPermissionMessage, type Permission } from '../auth/permissions.js';
import type { Context } from '../context.js';
import type { TimestampText } from '../timestamps.js';
import { ApiError, credentialRequiredError } from '../errors.js';
import { UNBOUNDED_LIST_MULTIPLIER } from './complexity.js';
import type PrismaTypes from '../generated/pothos-prisma-types.js';
import { getDatamodel } from '../generated/pothos-prisma-types.js';

export const builder = new SchemaBuilder<{
  Context: Context;
  PrismaTypes: PrismaTypes;
  DefaultFieldNullability: false;
  AuthScopes: { authenticated: boolean; permission: Permission };
  Scalars: {
    DateTime: { Input: Date; Output: Date | TimestampText };
    ID: { Input: string; Output: string };
    JSONObject: { Input: Record<string, unknown>; Output: Record<string, unknown> };
  };
}>({
  plugins: [ScopeAuthPlugin, PrismaPlugin, DataloaderPlugin, ComplexityPlugin],
  defaultFieldNullability: false,
  prisma: {
    client: (context) => context.db.prisma,
    dmmf: getDatamodel(),
    exposeDescriptions: true,
    onUnusedQuery: process.env.NODE_ENV === 'production' ? null : 'warn',
  },
  // Each field costs 1; a field's selection counts once per item its list may hold (see pageComplexity in
  // list.ts). The plugin only annotates the schema here: the budget is checked once per request, before
  // execution, by the admission spine (src/http/admission.ts, document-limits), with the request's variables.
  complexity: { defaultComplexity: 1, defaultListMultiplier: UNBOUNDED_LIST_MULTIPLIER, disabled: true },
  scopeAuth: {
    authScopes: (context) => ({
      authenticated: context.viewer !== null,
      permission: (permission) => context.viewer?.permissions.has(permission) ?? false,
    }),
    // No credential is 401; a credential without the permission is 403. Both carry UNAUTHORIZED.
    unauthorizedError: (_parent, context, _info, result) =>
      context.viewer
        ? new ApiError('UNAUTHORIZED', lacksPermissionMessage(missingPermission(result.failure), context.viewer.role), { status: 403 })
        : credentialRequiredError(),
  },
});

/** The permission a failed scope check asked for, when it was one. */
function missingPermission(failure: AuthFailure): string | null {
  if (failure.kind === AuthScopeFailureType.AuthScope && failure.scope === 'permission') return String(failure.parameter);
  if (failure.kind === AuthScopeFailureType.AnyAuthScopes || failure.kind === AuthScopeFailureType.AllAuthScopes) {
    for (const inner of failure.failures) {
      const found = missingPermission(inner);
      if (found) return found;
    }
  }
  return null;
}

builder.queryType({});
builder.mutationType({});
