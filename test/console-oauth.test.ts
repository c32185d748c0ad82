// A partner application's consent in the console, in Debian's headless Chromium, on PGlite (and PostgreSQL when
// TEST_DATABASE_URL is set): the application (played by openid-client in this process) sends the browser to the
// authorization endpoint; a member who is not signed in signs in first and comes back to the consent page, which
// names the application, the organization and the scopes; Approve sends a code to the redirect URI, which
// openid-client exchanges with its PKCE verifier; Refuse sends access_denied. The member then sees the
// application on "Approved applications" and revokes it; an admin sees it on "OAuth applications". Every page is
// checked with axe-core (no serious or critical violation), every console error fails the test, and so does any
// request that leaves 127.0.0.1 (the partner's redirect URI is a server of this test on 127.0.0.1).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oauth from 'openid-client';
import type { BrowserContext, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptInvitation, inviteMember } from '../src/auth/members.js';
import { createOAuthApplication } from '../src/auth/oauth-applications.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { createHttpServer } from '../src/http/http-server.js';
import { createLogger } from '../src/logger.js';
import { CHROMIUM, keepOffline, launchChromium, recordErrors, seriousAxeViolations } from './fixtures/chromium.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI) throw new Error(`${CHROMIUM} is missing: CI must install Debian's chromium package`);

const ROOT = new URL('..', import.meta.url).pathname;
const PASSWORD = 'a long enough password 4 consent';

describe.skipIf(!haveChromium).each(databaseKinds)('a partner application approved in the console on %s', (kind) => {
  let fixture: TestGateway;
  let server: Server;
  /** The partner's own server, on loopback: its redirect URI answers a page and records the request. */
  let partner: Server;
  let REDIRECT: string;
  let closeSockets: () => Promise<void>;
  let origin: string;
  let context: BrowserContext;
  let userDataDir: string;
  let application: { id: string; clientSecret: string; name: string };
  let config: oauth.Configuration;
  const email = `consent-${kind}@example.test`;
  const offsite: string[] = [];
  const problems: string[] = [];
  const callbacks: string[] = [];

  beforeAll(async () => {
    await build({ configFile: join(ROOT, 'console', 'vite.config.ts'), logLevel: 'warn' });
    fixture = await createTestGateway(kind);
    server = createHttpServer(fixture.gateway, { logger: createLogger('silent') });
    closeSockets = attachGraphqlWebSocket(server, fixture.gateway, createLogger('silent'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    partner = createServer((req, res) => {
      callbacks.push(new URL(req.url ?? '/', REDIRECT).href);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html lang="en"><title>Partner</title><main><p>Back at the partner.</p></main></html>');
    });
    await new Promise<void>((resolve) => partner.listen(0, '127.0.0.1', resolve));
    REDIRECT = `http://127.0.0.1:${(partner.address() as AddressInfo).port}/callback`;
    const { code } = await inviteMember(fixture.db.raw, { tenantId: fixture.tenants.demo.id, email, role: 'admin', createdBy: 'cli' });
    await acceptInvitation(fixture.db, code, PASSWORD);
    application = await createOAuthApplication(fixture.db.raw, {
      tenantId: fixture.tenants.demo.id,
      name: 'Partner Planner',
      redirectUris: [REDIRECT],
      scope: 'read write',
    });
    config = await oauth.discovery(new URL(origin), application.id, application.clientSecret, undefined, {
      algorithm: 'oauth2',
      execute: [oauth.allowInsecureRequests],
    });
    userDataDir = mkdtempSync(join(tmpdir(), 'gw-console-oauth-chromium-'));
    context = await launchChromium(userDataDir, { viewport: { width: 1200, height: 800 } });
    // The gateway and the partner are this machine's; anything else is refused and recorded.
    const allowed = [origin, new URL(REDIRECT).origin];
    await keepOffline(context, allowed, { offsite, problems });
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await closeSockets?.();
    partner?.closeAllConnections();
    await new Promise((resolve) => partner?.close(resolve));
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await fixture?.dispose();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  async function newPage(label: string): Promise<Page> {
    return recordErrors(await context.newPage(), label, problems);
  }

  async function checkAccessibility(page: Page, name: string): Promise<void> {
    expect(await seriousAxeViolations(page), `${name}: serious or critical axe violations`).toEqual([]);
  }

  /** The partner's authorization URL, with its PKCE verifier and state. */
  async function authorizationRequest(scope = 'read write') {
    const verifier = oauth.randomPKCECodeVerifier();
    const state = oauth.randomState();
    const url = oauth.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    return { url, verifier, state };
  }

  it('signs the member in first, shows the consent page, and sends a code on Approve', async () => {
    const page = await newPage('approve');
    const request = await authorizationRequest();
    await page.goto(request.url.href);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(new URL(page.url()).pathname).toMatch(/^\/console\/consent\//);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Partner Planner asks to act for you in' }).waitFor();
    await page.getByText(/^write:/).waitFor();
    await checkAccessibility(page, 'consent page');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL((url) => url.href.startsWith(REDIRECT));
    const callback = new URL(callbacks.at(-1)!);
    expect(callback.searchParams.get('state')).toBe(request.state);
    const tokens = await oauth.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
    });
    expect(tokens.scope?.split(' ').sort()).toEqual(['read', 'write']);
    const answer = await fetch(`${origin}/api/v1/integrations/connected`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(answer.status).toBe(200);
    await page.close();
  });

  it('sends access_denied on Refuse', async () => {
    const page = await newPage('refuse');
    const request = await authorizationRequest('read');
    await page.goto(request.url.href);
    await page.getByRole('button', { name: 'Refuse' }).click();
    await page.waitForURL((url) => url.href.startsWith(REDIRECT));
    const callback = new URL(callbacks.at(-1)!);
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(request.state);
    await page.close();
  });

  it('lists the approval for the member and the admin, and revokes it', async () => {
    const page = await newPage('approvals');
    await page.goto(`${origin}/console/users/oauth-applications`);
    await page.getByRole('heading', { name: 'OAuth applications' }).waitFor();
    await page.getByRole('cell', { name: application.id, exact: true }).waitFor();
    await page.getByRole('cell', { name: email, exact: true }).waitFor();
    await checkAccessibility(page, 'OAuth applications');

    await page.goto(`${origin}/console/approved-applications`);
    await page.getByRole('heading', { name: 'Approved applications' }).waitFor();
    await page.getByRole('cell', { name: 'Partner Planner', exact: true }).waitFor();
    await checkAccessibility(page, 'Approved applications');
    await page.getByRole('button', { name: 'Revoke Partner Planner' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('You have approved no application.').waitFor();
    await page.close();
    expect(offsite, 'requests that left 127.0.0.1').toEqual([]);
    expect(problems, 'console errors').toEqual([]);
  });
});
