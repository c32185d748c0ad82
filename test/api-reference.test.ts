import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, keepOffline, launchChromium, openRecorded, type OfflineRecord } from './fixtures/chromium.js';
import { contractViolations } from './fixtures/contract.js';
import { migratedPgliteDataDir } from './fixtures/databases.js';
import { printedToken, startServer, type RunningServer } from './fixtures/server-process.js';

// The API reference as a new user meets it: `npm start` on a new PGlite database (the demo), the page in a real
// headless Chromium, offline, authorised with the printed demo token. Every operation is run with "Try it out" →
// "Execute" and nothing else, in the order the page lists them (the order a user goes through them): each answers
// 2xx, and its answer fits the document. The examples that use their item up (a delete, the claim and the report
// on the claimed run) each name an item made for them (src/seed/demo-examples.ts). The invitation example is no
// code (the document is public): as a user does, the test pastes the code that inviteMember's "Try it out" answered.

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI) throw new Error(`${CHROMIUM} is missing: CI must install Debian's chromium package`);

type ExampleDocument = { paths: Record<string, { post: { parameters: Array<{ example: string }> } }> };
type Document = { paths: Record<string, Record<string, { operationId: string; tags: string[] }>> };

/** Streams that never end by themselves: Swagger UI shows their status only once they end, so the test takes the headers. */
const ENDLESS_STREAMS = new Set(['streamSyncs']);
/** Browser navigations, answered with a redirect to follow rather than a body to read: the page lists them, the test does not run them. */
const NAVIGATIONS = new Set(['startSingleSignOn', 'finishSingleSignOn']);
/**
 * The documented refusals "Try it out" meets on the demo: it has no identity provider, and the example issuer is no
 * provider this offline machine reaches (its discovery document cannot be read).
 */
const DEMO_REFUSALS: Record<string, number> = { getIdentityProvider: 404, configureIdentityProvider: 400 };

describe.skipIf(!haveChromium)('the API reference in a headless Chromium, against the demo', () => {
  let server: RunningServer;
  let token: string;
  let context: BrowserContext;
  let userDataDir: string;
  let dataDir: string;
  let record: OfflineRecord;

  beforeAll(async () => {
    dataDir = migratedPgliteDataDir('gw-api-reference-');
    server = await startServer({ DATA_DIR: dataDir });
    token = await printedToken(server);
    userDataDir = mkdtempSync(join(tmpdir(), 'gw-chromium-'));
    context = await launchChromium(userDataDir);
    record = await keepOffline(context, server.url);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await server?.kill();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('"Try it out" with its defaults answers 2xx on every operation, in the order the page lists them', async () => {
    const document = (await (await fetch(`${server.url}/api/v1/openapi.json`)).json()) as Document;
    const operations = new Map(
      Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, operation]) => [
          // Swagger UI writes a tag's spaces as underscores in its ids.
          `operations-${operation.tags[0]!.replaceAll(' ', '_')}-${operation.operationId}`,
          { path, method: method.toUpperCase(), operationId: operation.operationId },
        ]),
      ),
    );
    const page = await openRecorded(context, server.url, '/api/v1/docs', record);
    page.setDefaultTimeout(60_000);
    await page.locator('.info .title', { hasText: 'Integrations & Sync API' }).waitFor({ timeout: 30_000 });
    await page.locator('button.authorize').first().click();
    const tokenForm = page.locator('.auth-container').filter({ hasText: '(apiKey)' }).filter({ hasText: 'Authorization' });
    await tokenForm.locator('input').fill(token);
    await tokenForm.locator('button.authorize').click();
    await page.locator('button.close-modal').click();

    // The document's `webhooks` (the messages sent, under the lower-case "webhooks" heading) have no "Try it out".
    const shown = (await page.locator('.opblock[id^="operations-"]').evaluateAll((blocks) => blocks.map((block) => block.id))).filter(
      (id) => !id.startsWith('operations-webhooks-'),
    );
    expect([...shown].sort()).toEqual([...operations.keys()].sort());
    const answers: string[] = [];
    let invitationCode = '';
    for (const id of shown) {
      const { path, method, operationId } = operations.get(id)!;
      const template = new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      if (NAVIGATIONS.has(operationId)) {
        answers.push(`${operationId} navigation`);
        continue;
      }
      const operation = page.locator(`#${id}`);
      await operation.locator('.opblock-summary').first().click();
      await operation.getByRole('button', { name: 'Try it out' }).click();
      if (operationId === 'readInvitation' || operationId === 'acceptInvitation') {
        expect(invitationCode, `inviteMember runs before ${operationId}`).not.toBe('');
        await operation.locator('tr[data-param-name="code"] input').fill(invitationCode);
      }
      const answered = page
        .waitForResponse((response) => response.request().method() === method && template.test(new URL(response.url()).pathname), {
          timeout: 20_000,
        })
        .catch((error: unknown) => {
          throw new Error(`${operationId}: no answer (after ${answers.join(', ')}): ${String(error)}`);
        });
      await operation.getByRole('button', { name: 'Execute' }).click();
      const response = await answered;
      // An event stream's body is not read here (Playwright hands none out for text/event-stream): the page shows
      // its answer once it ends, as below.
      const stream = response.headers()['content-type']?.startsWith('text/event-stream') === true;
      const body = stream ? undefined : await response.text();
      if (operationId === 'inviteMember') invitationCode = (JSON.parse(body ?? '{}') as { data?: { code?: string } }).data?.code ?? '';
      answers.push(`${operationId} ${response.status()}`);
      if (operationId in DEMO_REFUSALS) {
        expect(response.status(), `${operationId} ${method} ${response.url()}: ${body}`).toBe(DEMO_REFUSALS[operationId]);
      } else {
        expect(response.status(), `${operationId} ${method} ${response.url()}: ${body}`).toBeGreaterThanOrEqual(200);
        expect(response.status(), `${operationId} ${method} ${response.url()}: ${body}`).toBeLessThan(300);
      }
      const violations = contractViolations({
        method,
        url: response.url(),
        status: response.status(),
        contentType: response.headers()['content-type'] ?? null,
        body,
      });
      expect(violations, operationId).toEqual([]);
      if (!ENDLESS_STREAMS.has(operationId)) {
        // The page shows the answer it got, as a user sees it.
        await operation
          .locator('.live-responses-table .response-col_status', { hasText: new RegExp(`^\\s*${response.status()}\\s*$`) })
          .waitFor({ timeout: 10_000 });
      }
      if (!['signIn', 'signOut', 'readInvitation', 'acceptInvitation'].includes(operationId)) {
        expect(response.request().headers().authorization, operationId).toBe(`Token ${token}`);
      }
      // Folded again: Swagger UI keeps every open operation's answer highlighted in the page, which slows it down.
      await operation.locator('.opblock-summary').first().click();
    }
    expect(answers).toHaveLength(operations.size);
    await page.close();

    // What the public document shows is no secret: its invitation example opens no invitation, and no token is in it.
    const publicDocument = await (await fetch(`${server.url}/api/v1/openapi.json`)).text();
    expect(publicDocument).not.toContain(token);
    expect(publicDocument).not.toContain(invitationCode);
    const example = (JSON.parse(publicDocument) as ExampleDocument).paths['/api/v1/auth/invitations/{code}']!.post.parameters[0]!.example;
    const accepted = await fetch(`${server.url}/api/v1/auth/invitations/${encodeURIComponent(example)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ password: 'a password nobody chose' }),
    });
    expect(accepted.status).toBe(404);
    expect(record.offsite, 'requests that left 127.0.0.1').toEqual([]);
    // Each documented refusal above is one failed load in the page's console; nothing else may be.
    const problems = [...record.problems];
    for (const status of Object.values(DEMO_REFUSALS)) {
      const at = problems.findIndex((problem) => problem.includes(`status of ${status} `));
      if (at >= 0) problems.splice(at, 1);
    }
    expect(problems, 'console errors').toEqual([]);
  }, 600_000);
});
