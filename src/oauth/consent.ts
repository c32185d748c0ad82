import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import { approvalIdOf, oauthApplicationOf, scopesOfMember } from '../auth/oauth-applications.js';
import type { Database } from '../db/client.js';
import { ApiError } from '../errors.js';
import type { Role } from '../generated/prisma/enums.js';

// The member's answer to an application's authorization request, through oidc-provider's interactions: the
// provider sends the browser to the console's consent page (OAUTH_INTERACTION_PATH → CONSENT_PAGE_PATH) with a
// cookie naming the interaction; the page reads what is asked (`details`) and sends Approve or Refuse (`answer`)
// with the member's console session; the provider then goes on at its resume endpoint, which only the browser
// that started the request can open (its own cookie), and sends the code (or access_denied) to the application.
// What is granted is what the request asks within both the application's scopes and the member's role, and only
// by a member of the application's organization.

/** The member answering, as their console session names them. */
export interface ConsentMember {
  tenantId: string;
  memberId: string;
  role: Role;
}

export interface ConsentDetails {
  application: { id: string; name: string };
  organization: { name: string; slug: string };
  /** The scopes the request asks for, within the application's. */
  requested: string[];
  /** Those the member's role lets them give. */
  grantable: string[];
  /** False when the member signed in to the console is of another organization than the application. */
  sameOrganization: boolean;
}

/** The scopes a request asks for: its `scope` parameter, within the application's. */
function requestedScopes(params: Record<string, unknown>, applicationScope: string): string[] {
  const allowed = new Set(applicationScope.split(' '));
  const asked = typeof params.scope === 'string' ? params.scope.split(' ').filter(Boolean) : [];
  return [...new Set(asked)].filter((scope) => allowed.has(scope));
}

async function interactionOf(provider: Provider, db: Database, req: IncomingMessage, res: ServerResponse, uid: string) {
  let interaction: Awaited<ReturnType<Provider['interactionDetails']>>;
  try {
    interaction = await provider.interactionDetails(req, res);
  } catch {
    throw new ApiError('NOT_FOUND', 'This authorization request has expired, was answered, or was started in another browser');
  }
  // The cookie names the interaction of this browser; the path names the one the page shows: they must agree.
  if (interaction.uid !== uid) throw new ApiError('NOT_FOUND', 'This authorization request was started in another browser');
  const application = await oauthApplicationOf(db, String(interaction.params.client_id));
  if (!application) throw new ApiError('NOT_FOUND', 'The application of this authorization request no longer exists');
  return { interaction, application };
}

/** What the consent page shows. */
export async function consentDetails(
  provider: Provider,
  db: Database,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
  member: ConsentMember,
): Promise<ConsentDetails> {
  const { interaction, application } = await interactionOf(provider, db, req, res, uid);
  const requested = requestedScopes(interaction.params, application.scope);
  const grantable = new Set<string>(scopesOfMember(member.role));
  return {
    application: { id: application.id, name: application.name },
    organization: { name: application.tenantName, slug: application.tenantSlug },
    requested,
    grantable: requested.filter((scope) => grantable.has(scope)),
    sameOrganization: application.tenantId === member.tenantId,
  };
}

/**
 * Records the member's answer and returns where the browser goes on (the provider's resume endpoint). An
 * approval makes a grant of the scopes both allow (the rest are refused in it); a refusal, a member of another
 * organization, or nothing left to grant answers the application `access_denied`.
 */
export async function answerConsent(
  provider: Provider,
  db: Database,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
  member: ConsentMember,
  approve: boolean,
  audience: string,
): Promise<string> {
  const { interaction, application } = await interactionOf(provider, db, req, res, uid);
  if (application.tenantId !== member.tenantId) {
    throw new ApiError('UNAUTHORIZED', `Only a member of ${application.tenantName} can approve this application: sign in to it`, {
      status: 403,
    });
  }
  const requested = requestedScopes(interaction.params, application.scope);
  const memberScopes = new Set<string>(scopesOfMember(member.role));
  const granted = requested.filter((scope) => memberScopes.has(scope));
  if (!approve || granted.length === 0) {
    return provider.interactionResult(
      req,
      res,
      {
        error: 'access_denied',
        error_description: approve ? "the member's role allows none of the scopes asked for" : 'the member refused',
      },
      { mergeWithLastSubmission: false },
    );
  }
  // One approval per member and application: a new consent adds to it (its tokens stay in one chain).
  const existing = await approvalIdOf(db, member.memberId, application.id);
  const grant =
    (existing ? await provider.Grant.find(existing) : undefined) ??
    new provider.Grant({ accountId: member.memberId, clientId: application.id });
  // The provider counts this API's scopes both as its own (the `scopes` it lists) and as the resource's.
  grant.addOIDCScope(granted.join(' '));
  grant.addResourceScope(audience, granted.join(' '));
  const withheld = requested.filter((scope) => !memberScopes.has(scope));
  if (withheld.length > 0) {
    grant.rejectOIDCScope(withheld.join(' '));
    grant.rejectResourceScope(audience, withheld.join(' '));
  }
  const grantId = await grant.save();
  // remember: false — the provider keeps no browser session of its own (src/http/oauth-endpoints.ts drops its
  // cookie): the next request is answered by whoever is signed in to the console then.
  return provider.interactionResult(
    req,
    res,
    { login: { accountId: member.memberId, remember: false }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}
