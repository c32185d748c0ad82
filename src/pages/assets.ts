import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { ASSETS_PATH, LOGOS_PATH } from '../paths.js';

// Static files of the pages (`static/` in the repository: the stylesheet, and the scripts that start GraphiQL
// and the API reference, kept out of the HTML so the pages' CSP can forbid inline scripts) and GraphiQL's
// own bundle from @graphql-yoga/render-graphiql. Nothing is fetched from a CDN: the pages work offline.

/**
 * `static/` at the project root: the nearest directory above this module that holds a package.json (this module
 * is src/pages/assets.ts when run from source, part of a bundle in dist/ when built).
 */
const STATIC_DIR = new URL('static/', projectRootOf(import.meta.url));

export function projectRootOf(moduleUrl: string): URL {
  for (let dir = new URL('./', moduleUrl); ; dir = new URL('../', dir)) {
    if (existsSync(new URL('package.json', dir))) return dir;
    if (dir.pathname === '/') throw new Error(`no package.json above ${moduleUrl}`);
  }
}

const STATIC_FILES: Record<string, string> = {
  'site.css': 'text/css; charset=utf-8',
  'graphiql-start.js': 'text/javascript; charset=utf-8',
  'api-docs-start.js': 'text/javascript; charset=utf-8',
};

/** GraphiQL's pieces, as @graphql-yoga/render-graphiql exports them, under `/assets/graphiql/<name>`. */
const GRAPHIQL_FILES = {
  'graphiql.js': { type: 'text/javascript; charset=utf-8', export: 'js' },
  'graphiql.css': { type: 'text/css; charset=utf-8', export: 'css' },
  'editor.worker.js': { type: 'text/javascript; charset=utf-8', export: 'editorWorkerService' },
  'json.worker.js': { type: 'text/javascript; charset=utf-8', export: 'jsonWorker' },
  'graphql.worker.js': { type: 'text/javascript; charset=utf-8', export: 'graphqlWorker' },
  'favicon.ico': { type: 'image/x-icon', export: 'favicon' },
} as const;

type GraphiQLBundle = Record<(typeof GRAPHIQL_FILES)[keyof typeof GRAPHIQL_FILES]['export'], string>;

/** The bundle is 9 MB of JavaScript text; it is loaded on the first request for it, not at start. */
let graphiqlBundle: Promise<GraphiQLBundle> | undefined;
const cache = new Map<string, Promise<ArrayBuffer>>();

function cached(key: string, load: () => Promise<ArrayBuffer>): Promise<ArrayBuffer> {
  let content = cache.get(key);
  if (!content) {
    content = load();
    // A failed load is not cached, so a later request can try again.
    content.catch(() => cache.delete(key));
    cache.set(key, content);
  }
  return content;
}

async function graphiqlFile(name: keyof typeof GRAPHIQL_FILES): Promise<ArrayBuffer> {
  graphiqlBundle ??= import('@graphql-yoga/render-graphiql/graphiql') as Promise<GraphiQLBundle>;
  graphiqlBundle.catch(() => (graphiqlBundle = undefined));
  const text = (await graphiqlBundle)[GRAPHIQL_FILES[name].export];
  // The favicon comes as a data: URL.
  const dataUrl = /^data:[^;,]+;base64,(.*)$/s.exec(text);
  return Uint8Array.from(dataUrl ? Buffer.from(dataUrl[1]!, 'base64') : Buffer.from(text, 'utf8')).buffer;
}

/** A logo's file name: a catalog slug and `.svg`, nothing that could leave `static/logos/`. */
const LOGO_FILE = /^[a-z0-9][a-z0-9-]{0,99}\.svg$/;

/**
 * The logo at `pathname` (under LOGOS_PATH), or null when there is none. SVG as an image: a browser runs no
 * script of an SVG shown by `<img>`, and opened on its own it gets the data responses' CSP (`default-src 'none'`).
 */
export async function logoResponse(pathname: string, fetchAPI: { Response: typeof Response }): Promise<Response | null> {
  const name = pathname.slice(LOGOS_PATH.length + 1);
  if (!LOGO_FILE.test(name)) return null;
  const file = new URL(`logos/${name}`, STATIC_DIR);
  if (!cache.has(`logos/${name}`) && !existsSync(file)) return null;
  const content = await cached(`logos/${name}`, async () => Uint8Array.from(await readFile(file)).buffer);
  return new fetchAPI.Response(content, { headers: { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=86400' } });
}

/** Where browsers look for a site's icon unasked: the same icon as GraphiQL's. */
export const FAVICON_PATH = '/favicon.ico';

/** The asset at `pathname` (under ASSETS_PATH, or FAVICON_PATH), or null when there is none. */
export async function assetResponse(pathname: string, fetchAPI: { Response: typeof Response }): Promise<Response | null> {
  const name = pathname === FAVICON_PATH ? 'graphiql/favicon.ico' : pathname.slice(ASSETS_PATH.length + 1);
  let type: string;
  let content: Promise<ArrayBuffer>;
  if (Object.hasOwn(STATIC_FILES, name)) {
    type = STATIC_FILES[name]!;
    content = cached(name, async () => Uint8Array.from(await readFile(new URL(name, STATIC_DIR))).buffer);
  } else if (name.startsWith('graphiql/') && Object.hasOwn(GRAPHIQL_FILES, name.slice('graphiql/'.length))) {
    const file = name.slice('graphiql/'.length) as keyof typeof GRAPHIQL_FILES;
    type = GRAPHIQL_FILES[file].type;
    content = cached(name, () => graphiqlFile(file));
  } else {
    return null;
  }
  // An hour: long enough for a browsing session, short enough that an upgrade shows up the same day.
  return new fetchAPI.Response(await content, { headers: { 'content-type': type, 'cache-control': 'public, max-age=3600' } });
}
