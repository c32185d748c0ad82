import { resealClientSecrets } from '../auth/identity-providers.js';
import { resealSecrets } from '../webhooks/reseal.js';
import { webhookSecretKeysOf } from '../webhooks/secret-keys.js';
import { CliError, type Command } from './commands.js';

export const webhookCommands: Command[] = [
  {
    name: ['webhooks', 'reseal'],
    usage: '',
    summary:
      "seal every stored webhook secret, and every identity provider's client secret, with the current key (WEBHOOK_SECRET_KEY), opening older ones with WEBHOOK_SECRET_PREVIOUS_KEYS: the last step of a key rotation",
    async run({ db, config, err }) {
      const keys = webhookSecretKeysOf(config, db);
      if (!keys.currentKeyId) throw new CliError('WEBHOOK_SECRET_KEY is not set: there is no key to seal with');
      const { resealed, unopened } = await resealSecrets(db, keys, { all: true });
      err(`sealed ${resealed} webhook secrets with key ${keys.currentKeyId}`);
      const providers = await resealClientSecrets(db, keys);
      err(`sealed ${providers.resealed} identity provider client secrets with key ${keys.currentKeyId}`);
      const problems = [
        ...(unopened.length > 0
          ? [
              `${unopened.length} webhook secrets could not be opened with the configured keys (add their key to WEBHOOK_SECRET_PREVIOUS_KEYS, or rotate those endpoints' secrets): ${unopened.join(', ')}`,
            ]
          : []),
        ...(providers.unopened.length > 0
          ? [
              `${providers.unopened.length} identity provider client secrets could not be opened with the configured keys (add their key to WEBHOOK_SECRET_PREVIOUS_KEYS, or save those organizations' client secret again): tenants ${providers.unopened.join(', ')}`,
            ]
          : []),
      ];
      if (problems.length > 0) throw new CliError(problems.join('; '));
    },
  },
];
