// The server's own HTML pages (landing page, error codes) share one look, taken from the API reference
// (Swagger UI): its fonts, colours and code spans. Everything they load comes from this server.

import { ASSETS_PATH } from '../paths.js';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Escapes `text` and renders its `code spans`, as the error descriptions and the README write them. */
export function renderInline(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** A complete page: `body` is HTML, `title` plain text. */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${ASSETS_PATH}/site.css">
</head>
<body>
<header class="topbar"><a href="/">Integrations &amp; Sync API</a></header>
<main>
${body}
</main>
</body>
</html>
`;
}

export function htmlResponse(fetchAPI: { Response: typeof Response }, html: string, status = 200): Response {
  return new fetchAPI.Response(html, { status, headers: { 'content-type': 'text/html; charset=utf-8' } });
}
