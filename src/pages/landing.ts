import { DOCS_PATH, ERROR_DOCS_PATH, INTEGRATIONS_BASE, OPENAPI_PATH } from '../paths.js';
import { escapeHtml, htmlPage } from './layout.js';

/** `/`: what this service is and where to go from here, for a person who opened the address in a browser. */
export function landingPage(origin: string): string {
  const curl = `curl -H "Authorization: Token $TOKEN" ${origin}${INTEGRATIONS_BASE}/connected`;
  return htmlPage(
    'Integrations & Sync API',
    `<h1>Integrations &amp; Sync API</h1>
<p>A multi-tenant API for an integrations product: a tenant browses the <strong>catalog</strong> (categories and the
applications it can connect), sees its <strong>connected applications</strong> and reads the history of their
<strong>synchronization runs</strong>. One service, three ways in over the same resolvers and checks: REST, GraphQL, and
live streams (GraphQL subscriptions, REST event streams and webhooks).</p>
<ul class="links">
<li><a href="/console">Console</a> — sign in as a member and manage connections, runs, webhooks and people in the browser</li>
<li><a href="/graphql">GraphiQL</a> — explore the GraphQL schema and run queries (signed in to the <a href="/console">console</a>, your session is used; otherwise set the <code>Authorization</code> header in its Headers tab)</li>
<li><a href="${DOCS_PATH}">API reference</a> — every REST endpoint, with “Try it out” (<a href="${OPENAPI_PATH}">OpenAPI document</a>)</li>
<li><a href="${ERROR_DOCS_PATH}">Error codes</a> — what each <code>error.code</code> means</li>
<li><a href="/healthz">/healthz</a> (the process answers) and <a href="/readyz">/readyz</a> (the database answers too)</li>
</ul>
<h2>First request</h2>
<p>Every API request needs a credential: <code>Authorization: Token &lt;token&gt;</code> (a service user's personal
access token) or <code>Authorization: Bearer &lt;JWT&gt;</code>. The first start of a new database prints an admin token
for the <code>demo</code> tenant; later starts print the command that creates another one. Then list the connections:</p>
<pre><code>${escapeHtml(curl)}</code></pre>`,
  );
}
