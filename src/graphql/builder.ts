import SchemaBuilder from '@pothos/core';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import PrismaPlugin from '@pothos/plugin-prisma';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import type { Permission } from '../auth/permissions.js';
import type { Context } from '../context.js';
import { ApiError } from '../errors.js';
import { credentialRequiredError } from './viewer.js';
import type PrismaTypes from '../generated/pothos-prisma-types.js';
import { getDatamodel } from '../generated/pothos-prisma-types.js';

export const builder = new SchemaBuilder<{
  Context: Context;
  PrismaTypes: PrismaTypes;
  DefaultFieldNullability: false;
  AuthScopes: { authenticated: boolean; permission: Permission };
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    ID: { Input: string; Output: string };
  };
}>({
  plugins: [ScopeAuthPlugin, PrismaPlugin, DataloaderPlugin],
  defaultFieldNullability: false,
  prisma: {
    client: (context) => context.db.prisma,
    dmmf: getDatamodel(),
    exposeDescriptions: true,
    filterConnectionTotalCount: true,
    onUnusedQuery: process.env.NODE_ENV === 'production' ? null : 'warn',
  },
  scopeAuth: {
    authScopes: (context) => ({
      authenticated: context.viewer !== null,
      permission: (permission) => context.viewer?.permissions.has(permission) ?? false,
    }),
    // No credential is 401; a credential without the permission is 403. Both carry UNAUTHORIZED.
    unauthorizedError: (_parent, context) =>
      context.viewer
        ? new ApiError('UNAUTHORIZED', 'The credential lacks the permission this operation needs', { status: 403 })
        : credentialRequiredError(),
  },
});

builder.queryType({});
builder.mutationType({});
