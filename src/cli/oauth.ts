import { readFileSync } from 'node:fs';
import { createOAuthApplication, deleteOAuthApplication, listOAuthApplications } from '../auth/oauth-applications.js';
import { createOAuthClient, deleteOAuthClient, listOAuthClients } from '../auth/oauth-clients.js';
import { findServiceUserByName } from '../auth/service-users.js';
import { CLI_ORIGIN } from '../db/activity.js';
import { rotateSigningKey } from '../oauth/signing-keys.js';
import { CliError, stringOption, table, type Command } from './commands.js';
import { requireTenant } from './tenant.js';

export const oauthCommands: Command[] = [
  {
    name: ['oauth-client', 'create'],
    usage: '--tenant <slug> --service-user <name> [--name <name>] [--scope "<read write engine>"] [--jwks <file>] [--json]',
    summary: 'create an OAuth client of a service user; prints its client id and secret (shown once)',
    options: {
      tenant: { type: 'string' },
      'service-user': { type: 'string' },
      name: { type: 'string' },
      scope: { type: 'string' },
      jwks: { type: 'string' },
      json: { type: 'boolean' },
    },
    async run({ db, out }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const userName = stringOption(input, 'service-user', true);
      const user = await findServiceUserByName(db, tenant.id, userName);
      if (!user) throw new CliError(`service user "${userName}" does not exist in tenant "${tenant.slug}"`);
      const jwksFile = stringOption(input, 'jwks', false);
      let jwks: unknown;
      if (jwksFile) {
        try {
          jwks = JSON.parse(readFileSync(jwksFile, 'utf8'));
        } catch (error) {
          throw new CliError(`--jwks: cannot read a JSON JWK Set from ${jwksFile}: ${(error as Error).message}`);
        }
      }
      const client = await createOAuthClient(db.raw, {
        tenantId: tenant.id,
        serviceUserId: user.id,
        name: stringOption(input, 'name', false),
        scope: stringOption(input, 'scope', false),
        jwks,
        createdBy: 'cli',
        activity: CLI_ORIGIN,
      });
      if (input.values.json) {
        out(
          JSON.stringify({ client_id: client.id, client_secret: client.clientSecret, scope: client.scope, auth_method: client.authMethod }),
        );
        return;
      }
      out(`client_id=${client.id}`);
      if (client.clientSecret) out(`client_secret=${client.clientSecret}`);
    },
  },
  {
    name: ['oauth-client', 'list'],
    usage: '--tenant <slug>',
    summary: "list a tenant's OAuth clients (never their secrets)",
    options: { tenant: { type: 'string' } },
    async run({ db, out }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const clients = await listOAuthClients(db, tenant.id);
      const rows = clients.map((c) => [c.id, c.name ?? '', c.serviceUserId, c.authMethod, c.scope, c.createdAt.toISOString()]);
      for (const line of table(['CLIENT ID', 'NAME', 'SERVICE USER', 'AUTH', 'SCOPE', 'CREATED'], rows)) out(line);
    },
  },
  {
    name: ['oauth-client', 'delete'],
    usage: '<client-id> --tenant <slug>',
    summary: 'delete an OAuth client; its access tokens stop working at once',
    options: { tenant: { type: 'string' } },
    positionals: { min: 1, max: 1 },
    async run({ db, err }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const clientId = input.positionals[0];
      if (!clientId) throw new CliError('usage: oauth-client delete <client-id> --tenant <slug>');
      await deleteOAuthClient(db, { tenantId: tenant.id, clientId, activity: CLI_ORIGIN });
      err(`deleted OAuth client ${clientId}`);
    },
  },
  {
    name: ['oauth-application', 'create'],
    usage: '--tenant <slug> --name <name> --redirect-uri <uri> [--redirect-uri <uri>…] [--scope "<read write engine>"] [--json]',
    summary: "register a partner's application (authorization code with PKCE); prints its client id and secret (shown once)",
    options: {
      tenant: { type: 'string' },
      name: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      scope: { type: 'string' },
      json: { type: 'boolean' },
    },
    async run({ db, out }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const redirectUris = (input.values['redirect-uri'] as string[] | undefined) ?? [];
      if (redirectUris.length === 0) throw new CliError('--redirect-uri is required (once per URI)');
      const application = await createOAuthApplication(db.raw, {
        tenantId: tenant.id,
        name: stringOption(input, 'name', true),
        redirectUris,
        scope: stringOption(input, 'scope', false),
        createdBy: 'cli',
        activity: CLI_ORIGIN,
      });
      if (input.values.json) {
        out(
          JSON.stringify({
            client_id: application.id,
            client_secret: application.clientSecret,
            redirect_uris: application.redirectUris,
            scope: application.scope,
          }),
        );
        return;
      }
      out(`client_id=${application.id}`);
      out(`client_secret=${application.clientSecret}`);
    },
  },
  {
    name: ['oauth-application', 'list'],
    usage: '--tenant <slug>',
    summary: "list a tenant's partner applications (never their secrets)",
    options: { tenant: { type: 'string' } },
    async run({ db, out }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const applications = await listOAuthApplications(db, tenant.id);
      const rows = applications.map((a) => [a.id, a.name, a.scope, a.redirectUris.join(' '), a.createdAt.toISOString()]);
      for (const line of table(['CLIENT ID', 'NAME', 'SCOPE', 'REDIRECT URIS', 'CREATED'], rows)) out(line);
    },
  },
  {
    name: ['oauth-application', 'delete'],
    usage: '<client-id> --tenant <slug>',
    summary: 'delete a partner application with every approval of it; its tokens stop working at once',
    options: { tenant: { type: 'string' } },
    positionals: { min: 1, max: 1 },
    async run({ db, err }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const applicationId = input.positionals[0];
      if (!applicationId) throw new CliError('usage: oauth-application delete <client-id> --tenant <slug>');
      await deleteOAuthApplication(db, { tenantId: tenant.id, applicationId, activity: CLI_ORIGIN });
      err(`deleted OAuth application ${applicationId}`);
    },
  },
  {
    name: ['oauth-key', 'rotate'],
    usage: '',
    summary: 'make a new signing key of the authorization server; the JWKS lists it and the previous one',
    options: {},
    async run({ db, out }) {
      const { current, previous } = await rotateSigningKey(db);
      out(`current=${current}`);
      if (previous) out(`previous=${previous}`);
    },
  },
];
