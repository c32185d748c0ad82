import { appendFileSync } from 'node:fs';
import { afterEach } from 'vitest';
import { compileContract, contractCheckedFetch, pendingViolations } from './fixtures/contract.js';

// Every test file runs with the contract check (test/fixtures/contract.ts): the REST responses it receives over
// `fetch` (servers on a port, processes) and through the gateway fixture's in-process `gateway.fetch`, and the
// webhook messages its receivers get, must fit the served OpenAPI document.

globalThis.fetch = contractCheckedFetch(globalThis.fetch);
compileContract();

afterEach(() => {
  if (pendingViolations.length === 0) return;
  const found = pendingViolations.splice(0);
  if (process.env.CONTRACT_LOG) {
    appendFileSync(process.env.CONTRACT_LOG, `webhook: ${found.join('\n')}\n\n`);
    return;
  }
  throw new Error(`webhook messages do not match the OpenAPI document's webhooks (src/domain/webhook-messages.ts):\n${found.join('\n')}`);
});
