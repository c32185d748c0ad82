import type { Plugin } from 'graphql-yoga';
import { assetResponse, FAVICON_PATH, logoResponse } from '../pages/assets.js';
import { consoleResponse, isConsolePath } from '../pages/console.js';
import { landingPage } from '../pages/landing.js';
import { htmlResponse } from '../pages/layout.js';
import { ASSETS_PATH, LOGOS_PATH } from '../paths.js';

/** The landing page at `/`, the pages' static files under `/assets/` (GraphiQL's bundle among them), `/favicon.ico`, the catalog's logos under `/logos/` and the console. */
export function usePages(): Plugin {
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return;
      const head = (response: Response) => (request.method === 'HEAD' ? new fetchAPI.Response(null, response) : response);
      if (url.pathname === '/') {
        endResponse(head(htmlResponse(fetchAPI, landingPage(url.origin))));
        return;
      }
      if (isConsolePath(url.pathname)) {
        endResponse(head(await consoleResponse(url.pathname, fetchAPI)));
        return;
      }
      if (url.pathname.startsWith(`${ASSETS_PATH}/`) || url.pathname === FAVICON_PATH) {
        const asset = await assetResponse(url.pathname, fetchAPI);
        if (asset) endResponse(head(asset));
      }
      if (url.pathname.startsWith(`${LOGOS_PATH}/`)) {
        const logo = await logoResponse(url.pathname, fetchAPI);
        if (logo) endResponse(head(logo));
      }
    },
  };
}
