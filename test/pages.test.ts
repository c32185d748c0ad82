import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { CHROMIUM, keepOffline, launchChromium, openRecorded, type OfflineRecord } from './fixtures/chromium.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliOn } from './fixtures/cli.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';

// The pages a person opens, in a real headless Chromium (Debian's `chromium`; `.ci/run` installs it): each
// renders, runs under its CSP without a violation, and makes no request off this machine. Every request that
// leaves 127.0.0.1 is recorded and aborted, so a page that depends on a CDN fails here as it would offline.

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI) throw new Error(`${CHROMIUM} is missing: CI must install Debian's chromium package`);

describe.skipIf(!haveChromium)('pages in a headless Chromium, offline', () => {
  let fixture: TestGateway;
  let server: Server;
  let origin: string;
  let context: BrowserContext;
  let userDataDir: string;
  /** Requests to anywhere but this server (aborted), and what the console reported as errors. */
  let record: OfflineRecord;

  beforeAll(async () => {
    fixture = await createTestGateway('pglite');
    server = createServer(fixture.gateway);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    userDataDir = mkdtempSync(join(tmpdir(), 'gw-chromium-'));
    context = await launchChromium(userDataDir);
    record = await keepOffline(context, origin);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => server?.close(resolve));
    await fixture?.dispose();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  const open = (path: string): Promise<Page> => openRecorded(context, origin, path, record);

  /** Queues a run (through REST, as the demo admin) of the first demo connection without one pending; its id. */
  async function queueARun(): Promise<string> {
    const headers = { authorization: `Token ${fixture.tenants.demo.adminToken}`, 'content-type': 'application/json' };
    const connections = await fixture.gateway.fetch(`${origin}/api/v1/integrations/connected?limit=20&select=id`, { headers });
    for (const { id } of ((await connections.json()) as { data: { id: string }[] }).data) {
      const queued = await fixture.gateway.fetch(`${origin}/api/v1/integrations/syncs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ connection_id: id }),
      });
      if (queued.status === 201) return ((await queued.json()) as { data: { id: string } }).data.id;
    }
    throw new Error('no demo connection could queue a run');
  }

  /**
   * Replaces what a GraphiQL (Monaco) editor holds with `text`, typed until the editor shows exactly that: on a
   * loaded machine a fresh editor may take the keys before it is ready, leaving its starting text beside the new
   * one (two operations, which GraphiQL asks to choose between instead of sending either).
   */
  async function replaceEditorText(page: Page, editor: Locator, text: string): Promise<void> {
    let shown = '';
    for (let attempt = 0; attempt < 10; attempt++) {
      await editor.click();
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Delete');
      await page.keyboard.insertText(text);
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText, the text as the editor shows it
      shown = (await editor.locator('.view-lines').innerText()).replaceAll('\u00a0', ' ').trim();
      if (shown === text) return;
      await page.waitForTimeout(500);
    }
    expect(shown, 'the editor holds exactly the typed text').toBe(text);
  }

  /**
   * Runs the operation in GraphiQL's query editor once GraphiQL has taken its name in: its tab is named after
   * it. Clicked sooner, GraphiQL still holds the starting query's operation name and answers "Cannot infer
   * operation" without sending anything.
   */
  async function execute(page: Page, operationName: string): Promise<void> {
    await page.getByRole('tab', { name: operationName }).waitFor({ timeout: 10_000 });
    await page.locator('.graphiql-execute-button').click();
  }

  function expectCleanRun(): void {
    expect(record.offsite, 'requests that left 127.0.0.1').toEqual([]);
    expect(record.problems, 'console errors (CSP violations among them)').toEqual([]);
  }

  it('/ says what the service is and links to GraphiQL, the API reference, the error codes and /healthz', async () => {
    const page = await open('/');
    await expect(page.locator('h1').textContent()).resolves.toBe('Integrations & Sync API');
    const links = await page.locator('main a').evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href')));
    expect(links).toEqual(
      expect.arrayContaining(['/graphql', '/api/v1/docs', '/api/v1/openapi.json', '/docs/errors', '/healthz', '/readyz']),
    );
    // The console is a way in of its own, listed as one; the page says what the README says: three ways in.
    await expect(page.locator('ul.links > li > a').first().getAttribute('href')).resolves.toBe('/console');
    await expect(page.locator('main').textContent()).resolves.toContain('three ways in');
    await expect(page.locator('pre code').textContent()).resolves.toBe(
      `curl -H "Authorization: Token $TOKEN" ${origin}/api/v1/integrations/connected`,
    );
    // The stylesheet loaded (the CSP allows 'self' only): code spans have the reference's colour.
    expect(
      await page
        .locator('main code')
        .first()
        .evaluate((code) => getComputedStyle(code).color),
    ).toBe('rgb(144, 18, 254)');
    for (const href of ['/graphql', '/api/v1/docs', '/docs/errors', '/healthz']) {
      const response = await page.request.get(`${origin}${href}`, { headers: { accept: 'text/html' } });
      expect(response.status(), href).toBe(200);
    }
    await page.close();
    expectCleanRun();
  });

  it('the error-code pages are styled like the reference and render their code spans', async () => {
    const page = await open('/docs/errors');
    expect(await page.locator('table tr').count()).toBeGreaterThan(5);
    await page.locator('a', { hasText: 'UNAUTHORIZED' }).click();
    await page.waitForURL(`${origin}/docs/errors/UNAUTHORIZED`);
    const spans = await page.locator('main p code').allTextContents();
    expect(spans).toContain('Authorization: Token <personal access token>');
    expect(await page.locator('main').textContent()).not.toContain('`');
    expect(await page.locator('body').evaluate((body) => getComputedStyle(body).fontFamily)).toBe('sans-serif');
    await page.close();
    expectCleanRun();
  });

  it('GraphiQL renders and runs a query with the Authorization header', async () => {
    const page = await open('/graphql');
    await page.locator('.graphiql-container').first().waitFor({ timeout: 30_000 });
    await page.getByText('Headers', { exact: true }).click();
    await replaceEditorText(
      page,
      page.locator('.graphiql-editor-tool .monaco-editor').last(),
      JSON.stringify({ Authorization: `Token ${fixture.tenants.demo.readerToken}` }),
    );
    const answered = page.waitForResponse(
      (response) =>
        new URL(response.url()).pathname === '/graphql' &&
        response.request().method() === 'POST' &&
        response.request().postData()?.includes('totalCount') === true,
    );
    await execute(page, 'Connections');
    const response = await answered;
    expect(response.request().headers().authorization).toBe(`Token ${fixture.tenants.demo.readerToken}`);
    expect(response.status()).toBe(200);
    const body = (await response.json()) as { data?: { connections?: { totalCount: number } }; errors?: unknown };
    expect(body.errors).toBeUndefined();
    expect(body.data?.connections?.totalCount).toBeGreaterThan(0);
    await page.locator('.result-window', { hasText: 'totalCount' }).waitFor({ timeout: 10_000 });
    await page.close();
    expectCleanRun();
  }, 90_000);

  it('GraphiQL runs a subscription and shows each change as it arrives', async () => {
    const page = await open('/graphql');
    await page.locator('.graphiql-container').first().waitFor({ timeout: 30_000 });
    await page.getByText('Headers', { exact: true }).click();
    await replaceEditorText(
      page,
      page.locator('.graphiql-editor-tool .monaco-editor').last(),
      JSON.stringify({ Authorization: `Token ${fixture.tenants.demo.adminToken}` }),
    );
    await replaceEditorText(
      page,
      page.locator('.graphiql-query-editor .monaco-editor').first(),
      'subscription Watch { syncChanged { id status } }',
    );
    // yoga's GraphiQL subscribes over SSE (a GET or POST to /graphql whose answer is text/event-stream).
    const subscribed = page.waitForResponse(
      (response) =>
        decodeURIComponent(response.url()).includes('syncChanged') || response.request().postData()?.includes('syncChanged') === true,
    );
    await execute(page, 'Watch');
    const response = await subscribed;
    expect(response.headers()['content-type']).toMatch(/^text\/event-stream/);
    // A change made elsewhere (here: a trigger through REST) shows up in the result pane.
    const queuedId = await queueARun();
    await page.locator('.result-window', { hasText: queuedId }).waitFor({ timeout: 10_000 });
    await page.close();
    expectCleanRun();
  }, 90_000);

  it('GraphiQL works for a person signed in to the console with their session, no token, and keeps nothing in localStorage', async () => {
    const email = 'gia.graphiql@example.com';
    const password = 'a session is enough for graphiql';
    const invited = await runCliOn(fixture.db, 'member', 'invite', '--tenant', 'demo', '--email', email, '--role', 'admin');
    expect(invited.code, invited.stderr).toBe(0);
    const code = invited.stdout.trim().split('/').pop()!;
    const headers = { 'content-type': 'application/json', 'x-requested-with': 'test' };
    const accepted = await fixture.gateway.fetch(`${origin}/api/v1/auth/invitations/${code}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ password }),
    });
    expect(accepted.status).toBeLessThan(300);
    // Signed in as the console signs in: the session cookie lands in this browser.
    const login = await context.request.post(`${origin}/api/v1/auth/login`, { headers, data: { email, password } });
    expect(login.status()).toBe(200);
    expect((await context.cookies(origin)).map((cookie) => cookie.name)).toContain('igw_session');

    const query = 'query Mine { organization { slug viewerRole } connections(limit: 1) { totalCount } }';
    const page = await open(`/graphql?query=${encodeURIComponent(query)}`);
    await page.locator('.graphiql-container').first().waitFor({ timeout: 30_000 });
    const answered = page.waitForResponse(
      (response) => new URL(response.url()).pathname === '/graphql' && response.request().postData()?.includes('query Mine') === true,
    );
    await execute(page, 'Mine');
    const response = await answered;
    const sent = response.request().headers();
    expect(sent.authorization).toBeUndefined();
    expect(sent['x-requested-with']).toBe('GraphiQL');
    expect(response.status()).toBe(200);
    const body = (await response.json()) as { data?: { organization: { slug: string; viewerRole: string } }; errors?: unknown };
    expect(body.errors).toBeUndefined();
    expect(body.data?.organization).toEqual({ slug: 'demo', viewerRole: 'admin' });
    await page.locator('.result-window', { hasText: 'viewerRole' }).waitFor({ timeout: 10_000 });

    // A subscription on the same session: a run queued elsewhere shows up in the result pane.
    await replaceEditorText(
      page,
      page.locator('.graphiql-query-editor .monaco-editor').first(),
      'subscription Watch { syncChanged { id status } }',
    );
    const subscribed = page.waitForResponse(
      (response) =>
        decodeURIComponent(response.url()).includes('syncChanged') || response.request().postData()?.includes('syncChanged') === true,
    );
    await execute(page, 'Watch');
    const stream = await subscribed;
    expect(stream.status()).toBe(200);
    expect(stream.headers()['content-type']).toMatch(/^text\/event-stream/);
    expect(stream.request().headers().authorization).toBeUndefined();
    const queuedId = await queueARun();
    await page.locator('.result-window', { hasText: queuedId }).waitFor({ timeout: 10_000 });

    // GraphiQL's state (tabs, query, headers) lives in this tab's sessionStorage, and nothing in localStorage,
    // in this test or the earlier ones that pasted a token.
    await expect
      .poll(() => page.evaluate(() => Object.keys(sessionStorage).filter((key) => key.startsWith('graphiql:')).length))
      .toBeGreaterThan(0);
    expect(await page.evaluate(() => Object.keys(localStorage))).toEqual([]);
    await page.close();
    await context.clearCookies();
    expectCleanRun();
  }, 90_000);
});
