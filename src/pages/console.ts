import { readdir, readFile } from 'node:fs/promises';
import { CONSOLE_PATH } from '../paths.js';
import { projectRootOf } from './assets.js';

// The console (console/ in the repository), built by Vite into dist-console/ at `npm install`: index.html for
// /console and every path below it (the app routes in the browser), and its hashed files under
// /console/assets/. A hashed file's name changes with its content, so it may be cached for a year; index.html,
// which names the current ones, is revalidated on every load.

const BUILD_DIR = new URL('dist-console/', projectRootOf(import.meta.url));
const ASSETS_PREFIX = `${CONSOLE_PATH}/assets/`;

const CONTENT_TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  woff2: 'font/woff2',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';

interface ConsoleBuild {
  index: Uint8Array;
  /** The built files below assets/, by name. */
  assets: ReadonlySet<string>;
}

let build: Promise<ConsoleBuild> | undefined;
const assetContents = new Map<string, Promise<Uint8Array>>();

async function loadBuild(): Promise<ConsoleBuild> {
  const [index, assets] = await Promise.all([readFile(new URL('index.html', BUILD_DIR)), readdir(new URL('assets/', BUILD_DIR))]);
  return { index, assets: new Set(assets) };
}

/** Whether `pathname` is the console's: `/console` or below it. */
export function isConsolePath(pathname: string): boolean {
  return pathname === CONSOLE_PATH || pathname.startsWith(`${CONSOLE_PATH}/`);
}

/** The answer to a GET of a console path: a built file, the app's page, or 404 for an asset that is not there. */
export async function consoleResponse(pathname: string, fetchAPI: { Response: typeof Response }): Promise<Response> {
  build ??= loadBuild();
  let files: ConsoleBuild;
  try {
    files = await build;
  } catch {
    build = undefined;
    return new fetchAPI.Response('The console is not built: run `npm install` (or `npm run build:console`) and restart the server.\n', {
      status: 503,
      headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
    });
  }
  if (pathname.startsWith(ASSETS_PREFIX)) {
    const name = pathname.slice(ASSETS_PREFIX.length);
    const type = CONTENT_TYPES[name.slice(name.lastIndexOf('.') + 1)];
    if (!files.assets.has(name) || !type) {
      return new fetchAPI.Response('Not found\n', {
        status: 404,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
      });
    }
    let content = assetContents.get(name);
    if (!content) {
      content = readFile(new URL(`assets/${name}`, BUILD_DIR));
      content.catch(() => assetContents.delete(name));
      assetContents.set(name, content);
    }
    return new fetchAPI.Response(Uint8Array.from(await content).buffer, { headers: { 'content-type': type, 'cache-control': IMMUTABLE } });
  }
  return new fetchAPI.Response(Uint8Array.from(files.index).buffer, {
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' },
  });
}
