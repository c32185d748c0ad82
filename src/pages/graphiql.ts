import { ASSETS_PATH } from '../paths.js';
import { escapeHtml } from './layout.js';

// GraphiQL as yoga builds it (@graphql-yoga/render-graphiql: GraphiQL with yoga's fetcher, which also runs
// subscriptions over SSE), but with its script, styles and Monaco's workers served as files by this server
// instead of inlined (yoga's own page) or loaded from a CDN (yoga's default). The options travel in a JSON
// block, which is data, not script, so the page runs under a CSP without 'unsafe-inline' scripts.

/** yoga's GraphiQL page renderer (createYoga's `renderGraphiQL`). */
export function renderGraphiQLPage(options: { title?: string } & Record<string, unknown>): string {
  // `<` escaped, so no value can close the JSON block's <script> element.
  const json = JSON.stringify(options).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title ?? 'GraphiQL')}</title>
<link rel="icon" href="${ASSETS_PATH}/graphiql/favicon.ico">
<link rel="stylesheet" href="${ASSETS_PATH}/graphiql/graphiql.css">
</head>
<body id="body" class="no-focus-outline">
<noscript>GraphiQL needs JavaScript.</noscript>
<div id="root"></div>
<script type="application/json" id="graphiql-options">${json}</script>
<script src="${ASSETS_PATH}/graphiql-start.js"></script>
<script src="${ASSETS_PATH}/graphiql/graphiql.js"></script>
</body>
</html>
`;
}
