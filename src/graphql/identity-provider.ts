import type { IdentityProviderSettings } from '../auth/identity-providers.js';
import { builder } from './builder.js';
import { activityOriginOf, requireViewer } from './viewer.js';

// The organization's identity provider (single sign-on), admin only (access:manage), always the caller's tenant's:
//
//   type IdentityProvider { issuer, clientId, emailDomains, firstSignIn: FirstSignIn, roleClaim, required, createdAt, updatedAt }
//   enum FirstSignIn { invitation reader claim }
//   Query.identityProvider: IdentityProvider                       null when the organization has none
//   Mutation.configureIdentityProvider(input: IdentityProviderInput!): IdentityProvider!   creates or changes (a merge)
//   Mutation.removeIdentityProvider: RemovedIdentityProvider!       { removed: Boolean! }
//
// The client secret goes in and never comes out: no field shows it.

const FirstSignIn = builder.enumType('FirstSignIn', {
  values: {
    invitation: { description: 'Refused unless invited: an invitation links the person at the first sign-in.' },
    reader: { description: 'A new member with the reader role.' },
    claim: { description: 'A new member with the role (admin or reader) the ID token claim roleClaim names; refused without one.' },
  } as const,
  description: 'What a person unknown to the organization gets at a first sign-in with its identity provider.',
});

const IdentityProvider = builder.objectRef<IdentityProviderSettings>('IdentityProvider').implement({
  description:
    "The organization's OpenID Connect provider: its members sign in there (GET /api/v1/auth/sso/start). The client secret is stored sealed and never shown.",
  fields: (t) => ({
    issuer: t.exposeString('issuer', { description: 'The issuer identifier (its /.well-known/openid-configuration is read).' }),
    clientId: t.exposeString('clientId', { description: 'The client id the provider gave this gateway.' }),
    emailDomains: t.exposeStringList('emailDomains', {
      description: "A person's verified email must be in one of these domains to be linked to a member or let in.",
    }),
    firstSignIn: t.field({ type: FirstSignIn, resolve: (provider) => provider.firstSignIn }),
    roleClaim: t.exposeString('roleClaim', { nullable: true, description: 'With firstSignIn claim: the claim that names the role.' }),
    required: t.exposeBoolean('required', {
      description: "True: the organization's members sign in with the provider only; password sign-in is off for them.",
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (provider) => new Date(provider.createdAt) }),
    updatedAt: t.field({ type: 'DateTime', resolve: (provider) => new Date(provider.updatedAt) }),
  }),
});

const IdentityProviderInput = builder.inputType('IdentityProviderInput', {
  description:
    'The settings to set; what is left out keeps its value. A new provider needs issuer, clientId, clientSecret and emailDomains.',
  fields: (t) => ({
    issuer: t.string({
      description: 'The issuer identifier, an https URL (http and private addresses only with SSO_ALLOW_PRIVATE_ISSUERS=1).',
    }),
    clientId: t.string(),
    clientSecret: t.string({ description: 'Stored sealed; never shown again. Left out, the stored one stays.' }),
    emailDomains: t.stringList(),
    firstSignIn: t.field({ type: FirstSignIn }),
    roleClaim: t.string({
      description: 'With firstSignIn claim: the ID token claim whose value (admin or reader, or a list holding one) is the role.',
    }),
    required: t.boolean({
      description: 'True turns password sign-in off for the members; needs an admin who has signed in with the provider.',
    }),
  }),
});

const RemovedIdentityProvider = builder.objectRef<{ removed: boolean }>('RemovedIdentityProvider').implement({
  fields: (t) => ({ removed: t.exposeBoolean('removed', { description: 'False when the organization had no provider.' }) }),
});

builder.queryFields((t) => ({
  identityProvider: t.field({
    type: IdentityProvider,
    nullable: true,
    description: "The organization's identity provider (single sign-on); null when it has none.",
    authScopes: { permission: 'access:manage' },
    resolve: (_root, _args, context) => context.identityProviders.settingsOf(requireViewer(context).tenantId),
  }),
}));

builder.mutationFields((t) => ({
  configureIdentityProvider: t.field({
    type: IdentityProvider,
    description:
      "Creates or changes the organization's identity provider. The discovery document is read at once (a 400 when it cannot be used). A changed issuer unlinks the members from the previous provider's accounts.",
    authScopes: { permission: 'access:manage' },
    args: { input: t.arg({ type: IdentityProviderInput, required: true }) },
    resolve: (_root, args, context) => {
      // GraphQL's null for a left-out field means "keep", except roleClaim, which null clears.
      const input = Object.fromEntries(Object.entries(args.input).filter(([name, value]) => value !== null || name === 'roleClaim'));
      return context.identityProviders.configure(requireViewer(context).tenantId, input, activityOriginOf(context));
    },
  }),
  removeIdentityProvider: t.field({
    type: RemovedIdentityProvider,
    description: "Removes the organization's identity provider: members sign in with their passwords again (those who have one).",
    authScopes: { permission: 'access:manage' },
    resolve: async (_root, _args, context) => ({
      removed: await context.identityProviders.remove(requireViewer(context).tenantId, activityOriginOf(context)),
    }),
  }),
}));
