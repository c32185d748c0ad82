// The catalog's logos: every application's `logo_url` (the spec's "path or URL of a logo") is a path this server
// serves itself, from static/logos/, so the console shows logos with no request leaving the machine. The REST
// answers keep the field exactly as the spec shapes it; the files are public, SVG, and nothing else is reachable.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPLICATIONS } from '../src/seed/catalog.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';

const ROOT = new URL('..', import.meta.url).pathname;
const ORIGIN = 'http://gateway.test';

it('has one SVG in static/logos/ for each catalog application, and no other', () => {
  const files = readdirSync(join(ROOT, 'static', 'logos')).sort();
  expect(files).toEqual(APPLICATIONS.map((application) => `${application.slug}.svg`).sort());
  for (const application of APPLICATIONS) expect(application.logoUrl).toBe(`/logos/${application.slug}.svg`);
});

describe.each(databaseKinds)('application logos on %s', (kind) => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await createTestGateway(kind);
  });
  afterAll(() => t?.dispose());

  const get = (path: string, headers: Record<string, string> = {}) => t.gateway.fetch(`${ORIGIN}${path}`, { headers });
  const admin = () => ({ authorization: `Token ${t.tenants.demo.adminToken}` });

  async function expectLogo(path: string): Promise<void> {
    // Without credentials: an <img> of the console, or of any client, loads it as a plain image.
    const response = await get(path);
    expect(response.status, path).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/svg+xml');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    // Opened on its own, the SVG may load and run nothing.
    expect(response.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(response.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    const body = await response.text();
    expect(body).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(body).not.toMatch(/<script|href=|url\(/i);
  }

  it('serves the logo each catalog entry names, and the catalog names it as the spec shows logo_url', async () => {
    const response = await get('/api/v1/integrations/available?limit=100&select=slug,logo_url', admin());
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as { data: { slug: string; logo_url: string }[] };
    expect(data.length).toBe(APPLICATIONS.length);
    for (const application of data) {
      expect(application.logo_url).toBe(`/logos/${application.slug}.svg`);
      await expectLogo(application.logo_url);
    }
  });

  it("serves each connection's logo (its application's) from its list entry", async () => {
    const response = await get('/api/v1/integrations/connected?limit=100&select=application_slug,logo_url', admin());
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as { data: { application_slug: string; logo_url: string }[] };
    expect(data.length).toBeGreaterThan(0);
    for (const connection of new Map(data.map((c) => [c.logo_url, c])).values()) {
      expect(connection.logo_url).toBe(`/logos/${connection.application_slug}.svg`);
      await expectLogo(connection.logo_url);
    }
  });

  it('answers 404 for anything under /logos/ that is not a logo file', async () => {
    for (const path of [
      '/logos/no-such-application.svg',
      '/logos/stripe.SVG',
      '/logos/stripe.png',
      '/logos/',
      '/logos/..%2Fpackage.json',
      '/logos/%2e%2e/site.css',
      '/logos/.hidden.svg',
    ]) {
      const response = await get(path);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type'), path).not.toBe('image/svg+xml');
    }
  });
});
