import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DOCS_PATH, OPENAPI_PATH } from '../paths.js';

// The human-readable API reference: Swagger UI from the installed swagger-ui-dist package, served by the
// gateway itself (no CDN: the page has to work where the server has no internet access), started by a script
// file of ours (no inline script, which the pages' CSP forbids).

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Integrations &amp; Sync API — REST reference</title>
<link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-32x32.png">
<link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css">
</head>
<body>
<div id="api-reference" data-openapi-url="${OPENAPI_PATH}"></div>
<script src="${DOCS_PATH}/swagger-ui-bundle.js"></script>
<script src="/assets/api-docs-start.js"></script>
</body>
</html>
`;

let assetDir: string | undefined;
const assetCache = new Map<string, Promise<ArrayBuffer>>();

function readAsset(name: string): Promise<ArrayBuffer> {
  assetDir ??= dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  let content = assetCache.get(name);
  if (!content) {
    content = readFile(join(assetDir, name)).then((bytes) => Uint8Array.from(bytes).buffer);
    // A failed read is not cached, so a later request can try again.
    content.catch(() => assetCache.delete(name));
    assetCache.set(name, content);
  }
  return content;
}

/** The docs page or one of its assets for a path under DOCS_PATH; null when there is no such file. */
export async function apiDocsResponse(pathname: string, fetchAPI: { Response: typeof Response }): Promise<Response | null> {
  if (pathname === DOCS_PATH) {
    return new fetchAPI.Response(PAGE, { headers: { 'content-type': 'text/html; charset=utf-8' } });
  }
  const name = pathname.slice(DOCS_PATH.length + 1);
  const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!type) return null;
  return new fetchAPI.Response(await readAsset(name), {
    headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' },
  });
}
