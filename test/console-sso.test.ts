// The console's single sign-on in Debian's headless Chromium, on PGlite (and PostgreSQL when TEST_DATABASE_URL is
// set): the sign-in page sends the browser to the organization's identity provider (`oidc-provider` in this
// process, whose login page signs the test's account in at once) and the browser comes back signed in; an admin
// changes the SSO settings page; a person the organization refuses comes back to the sign-in page with the reason.
// Every page is checked with axe-core (no serious or critical violation), every console error fails the test, and
// so does any request that leaves 127.0.0.1.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { createLogger } from '../src/logger.js';
import { CHROMIUM, keepOffline, launchChromium, recordErrors, seriousAxeViolations } from './fixtures/chromium.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';
import { TestIdentityProvider } from './fixtures/oidc-provider.js';

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI) throw new Error(`${CHROMIUM} is missing: CI must install Debian's chromium package`);

const ROOT = new URL('..', import.meta.url).pathname;
const CLIENT_SECRET = 'the-console-test-client-secret-0123456789';

describe.skipIf(!haveChromium).each(databaseKinds)('single sign-on in the console on %s', (kind) => {
  let fixture: TestGateway;
  let server: Server;
  let closeSockets: () => Promise<void>;
  let origin: string;
  let idp: TestIdentityProvider;
  let context: BrowserContext;
  let userDataDir: string;
  const offsite: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    await build({ configFile: join(ROOT, 'console', 'vite.config.ts'), logLevel: 'warn' });
    fixture = await createTestGateway(kind, { config: { SSO_ALLOW_PRIVATE_ISSUERS: '1' } });
    server = createServer(fixture.gateway);
    closeSockets = attachGraphqlWebSocket(server, fixture.gateway, createLogger('silent'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    idp = await TestIdentityProvider.start([
      { clientId: 'console-gateway', clientSecret: CLIENT_SECRET, redirectUris: [`${origin}/api/v1/auth/sso/callback`] },
    ]);
    idp.accounts.set('sub-admin', { email: 'sso.admin@acme.test', email_verified: true, gateway_role: 'admin' });
    idp.accounts.set('sub-stranger', { email: 'stranger@acme.test', email_verified: true });
    await graphql(fixture.gateway, 'mutation ($input: IdentityProviderInput!) { configureIdentityProvider(input: $input) { issuer } }', {
      token: fixture.tenants.demo.adminToken,
      expectOk: true,
      variables: {
        input: {
          issuer: idp.issuer,
          clientId: 'console-gateway',
          clientSecret: CLIENT_SECRET,
          emailDomains: ['acme.test'],
          firstSignIn: 'claim',
          roleClaim: 'gateway_role',
        },
      },
    });
    userDataDir = mkdtempSync(join(tmpdir(), 'gw-console-sso-chromium-'));
    context = await launchChromium(userDataDir, { viewport: { width: 1200, height: 800 } });
    // The gateway and the identity provider are this machine's; anything else is refused and recorded.
    const allowed = [origin, idp.issuer];
    await keepOffline(context, allowed, { offsite, problems });
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await idp?.close();
    await closeSockets?.();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await fixture?.dispose();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  async function newPage(label: string): Promise<Page> {
    return recordErrors(await context.newPage(), label, problems);
  }

  /** axe-core on the page as it is now: no serious or critical violation. */
  async function checkAccessibility(page: Page, name: string): Promise<void> {
    expect(await seriousAxeViolations(page), `${name}: serious or critical axe violations`).toEqual([]);
  }

  /**
   * Signs whoever is signed in out, then starts a single sign-on from the sign-in page. `anew`: the provider forgets
   * its own session too (its cookies share 127.0.0.1 with the gateway's), so its login page runs again.
   */
  async function signInWithProvider(page: Page, address: string, { anew = false } = {}): Promise<void> {
    await page.goto(`${origin}/console`);
    const signInHeading = page.getByRole('heading', { name: 'Sign in' });
    const overview = page.getByRole('heading', { name: 'Overview' });
    await signInHeading.or(overview).waitFor();
    if (await overview.isVisible()) await page.getByRole('button', { name: 'Sign out' }).click();
    await signInHeading.waitFor();
    if (anew) await context.clearCookies();
    await page.getByLabel('Work address').fill(address);
    await page.getByRole('button', { name: "Sign in with your organization's identity provider" }).click();
  }

  it('signs a member in through the identity provider from the sign-in page', async () => {
    const page = await newPage('sign-in');
    await page.goto(`${origin}/console`);
    await page.getByRole('heading', { name: 'Single sign-on' }).waitFor();
    await checkAccessibility(page, 'sign-in page');
    idp.next = 'sub-admin';
    await signInWithProvider(page, 'sso.admin@acme.test');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByText('Role: admin').waitFor();
    // The console took the sign-in's mark out of the address.
    expect(new URL(page.url()).search).toBe('');
    const cookies = await context.cookies(origin);
    expect(cookies.find((cookie) => cookie.name === 'igw_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    expect(cookies.find((cookie) => cookie.name === 'igw_sso')).toBeUndefined();
    await page.close();
  });

  it('lets an admin change the SSO settings, never showing the client secret', async () => {
    const page = await newPage('settings');
    await page.goto(`${origin}/console/users/sso`);
    await page.getByRole('heading', { name: 'SSO settings' }).waitFor();
    await expect.poll(() => page.getByLabel('Issuer').inputValue()).toBe(idp.issuer);
    expect(await page.getByLabel('Client secret').inputValue()).toBe('');
    expect(await page.content()).not.toContain(CLIENT_SECRET);
    await page.getByText(`${origin}/api/v1/auth/sso/callback`).waitFor();
    await checkAccessibility(page, 'SSO settings');

    await page.getByLabel('First sign-in of a person who is not a member').selectOption('invitation');
    await expect.poll(() => page.getByLabel('Role claim').count()).toBe(0);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const saved = await graphql(fixture.gateway, '{ identityProvider { firstSignIn roleClaim required } }', {
      token: fixture.tenants.demo.adminToken,
      expectOk: true,
    });
    expect(saved.body.data!.identityProvider).toEqual({ firstSignIn: 'invitation', roleClaim: null, required: false });
    await checkAccessibility(page, 'SSO settings, saved');
    await page.close();
  });

  it('brings a refused person back to the sign-in page with the reason', async () => {
    const page = await newPage('refused');
    idp.next = 'sub-stranger';
    await signInWithProvider(page, 'demo', { anew: true });
    await page.getByText('You are not a member of this organization yet: ask an admin for an invitation.').waitFor();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    // The reason is shown once: it is taken out of the address.
    expect(new URL(page.url()).search).toBe('');
    await checkAccessibility(page, 'sign-in page, refused');
    await page.close();
    expect(offsite, 'requests that left 127.0.0.1').toEqual([]);
    expect(problems, 'console errors').toEqual([]);
  });
});
