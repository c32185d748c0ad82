import type { Plugin } from 'graphql-yoga';
import { ERROR_CODES, ERROR_DOCS_PATH, isErrorCode } from '../errors.js';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body>${body}</body></html>`;
}

/** Serves the page each error body's `docs` URL points at, plus an index of all codes. */
export function useErrorDocs(): Plugin {
  return {
    onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== ERROR_DOCS_PATH && !url.pathname.startsWith(`${ERROR_DOCS_PATH}/`)) return;
      const code = url.pathname.slice(ERROR_DOCS_PATH.length + 1);
      const html = (status: number, body: string) =>
        endResponse(new fetchAPI.Response(body, { status, headers: { 'content-type': 'text/html; charset=utf-8' } }));
      if (code === '') {
        const rows = Object.entries(ERROR_CODES)
          .map(([name, info]) => `<tr><td><a href="${ERROR_DOCS_PATH}/${name}">${name}</a></td><td>${info.status}</td><td>${escapeHtml(info.title)}</td></tr>`)
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
          `<h1>${code}</h1><p>HTTP ${info.status}${code === 'UNAUTHORIZED' ? ' or 403' : ''} — ${escapeHtml(info.title)}</p><p>${escapeHtml(info.description)}</p><p><a href="${ERROR_DOCS_PATH}">All codes</a></p>`,
        ),
      );
    },
  };
}
