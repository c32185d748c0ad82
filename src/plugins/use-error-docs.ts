import type { Plugin } from 'graphql-yoga';
import { ERROR_CODES, exampleErrorBody, isErrorCode } from '../errors.js';
import { ERROR_DOCS_PATH } from '../paths.js';
import { escapeHtml, htmlPage as page, htmlResponse, renderInline } from '../pages/layout.js';

const statusBadge = (status: number | string) => `<span class="status s${String(status)[0]}">${status}</span>`;

/** Serves the page each error body's `docs` URL points at, plus an index of all codes. */
export function useErrorDocs(): Plugin {
  return {
    onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== ERROR_DOCS_PATH && !url.pathname.startsWith(`${ERROR_DOCS_PATH}/`)) return;
      const code = url.pathname.slice(ERROR_DOCS_PATH.length + 1);
      const html = (status: number, body: string) => endResponse(htmlResponse(fetchAPI, body, status));
      if (code === '') {
        const rows = Object.entries(ERROR_CODES)
          .map(
            ([name, info]) =>
              `<tr><td><a href="${ERROR_DOCS_PATH}/${name}"><code>${name}</code></a></td><td>${info.statuses.map(statusBadge).join(' ')}</td><td>${escapeHtml(info.title)}</td></tr>`,
          )
          .join('');
        html(200, page('Error codes', `<h1>Error codes</h1><table><tr><th>code</th><th>HTTP</th><th>meaning</th></tr>${rows}</table>`));
        return;
      }
      if (!isErrorCode(code)) {
        html(404, page('Unknown error code', `<h1>Unknown error code</h1><p><a href="${ERROR_DOCS_PATH}">All codes</a></p>`));
        return;
      }
      const info = ERROR_CODES[code];
      html(
        200,
        page(
          code,
          `<h1><code>${code}</code></h1><p>${info.statuses.map(statusBadge).join(' or ')} ${escapeHtml(info.title)}</p><p>${renderInline(info.description)}</p>` +
            info.statuses
              .map(
                (status) =>
                  `<h2>Example: HTTP ${status}</h2><pre><code>${escapeHtml(JSON.stringify(exampleErrorBody(code, status), null, 2))}</code></pre>`,
              )
              .join('') +
            `<p><a href="${ERROR_DOCS_PATH}">All codes</a></p>`,
        ),
      );
    },
  };
}
