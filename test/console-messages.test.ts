// The console's messages as a person reads them, from the server's own answers: every message a sentence (a
// capital first, a full stop last, as the console's own "The two passwords differ."), and a refused input's
// problems named by member, never the raw "invalid input: input.url: …".
import { CombinedError } from 'urql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorText } from '../console/src/api.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';

describe("the console's error messages", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await createTestGateway('pglite');
  });
  afterAll(() => t?.dispose());

  it('a bad webhook URL reads as a sentence naming the URL', async () => {
    const answer = await graphql(t.gateway, 'mutation { createWebhookEndpoint(input: { url: "not a url" }) { id } }', {
      token: t.tenants.demo.adminToken,
    });
    expect(answer.body.errors?.[0]?.message).toMatch(/^invalid input: input\.url: /);
    const shown = errorText(new CombinedError({ graphQLErrors: answer.body.errors as never }));
    expect(shown).toMatch(/^The url must be [^:]+\.$/);
    expect(shown).not.toMatch(/invalid input|input\.url/);
  });

  it("the server's lower-case messages read in the console's case", async () => {
    const answer = await graphql(t.gateway, 'mutation { inviteMember(email: "not an email", role: reader) { code } }', {
      token: t.tenants.demo.adminToken,
    });
    const message = String(answer.body.errors?.[0]?.message);
    expect(message).toMatch(/^[a-z]/);
    const shown = errorText(new CombinedError({ graphQLErrors: answer.body.errors as never }))!;
    expect(shown).toBe(`${message[0]!.toUpperCase()}${message.slice(1)}.`);
    expect(errorText('the password is on a list of commonly used passwords: choose another')).toBe(
      'The password is on a list of commonly used passwords: choose another.',
    );
    expect(errorText('The two passwords differ.')).toBe('The two passwords differ.');
  });
});
