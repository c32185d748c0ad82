// `npm run engine -- --simulate`: the reference sync engine (src/engine/simulated-engine.ts) against a running
// gateway, through the public REST API only.
import { parseArgs } from 'node:util';
import { EngineStopped, runEngine } from './engine/simulated-engine.js';

const USAGE = `usage: ENGINE_TOKEN=<engine token> npm run engine -- --simulate [--url <url>]
         [--workers <n>] [--failure-rate <0..1>]

Claims due sync runs, reports progress every few hundred milliseconds and
finishes them with simulated counts and occasional failures, through the REST
API with the engine token in ENGINE_TOKEN (not an argument: npm echoes its
arguments and ps shows them). Make one with:
  npm run --silent cli -- service-user create --tenant demo --name engine \\
    --role engine
  export ENGINE_TOKEN="$(npm run --silent cli -- token create --tenant demo \\
    --service-user engine --expires <YYYY-MM-DD>)"

options:
  --url <url>             the gateway (default GATEWAY_URL, else
                          http://127.0.0.1:4000)
  --workers <n>           runs worked at once, 1 to 32 (default 2)
  --failure-rate <0..1>   the share of runs that fail (default 0.1)

Stop it with Ctrl-C.`;

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${USAGE}\n`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      simulate: { type: 'boolean' },
      url: { type: 'string', default: process.env.GATEWAY_URL ?? 'http://127.0.0.1:4000' },
      token: { type: 'string', default: process.env.ENGINE_TOKEN },
      workers: { type: 'string', default: '2' },
      'failure-rate': { type: 'string', default: '0.1' },
      help: { type: 'boolean' },
    },
  }));
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (!values.simulate) fail('Only the simulated engine exists: pass --simulate.');
if (!values.token) fail('No token: set ENGINE_TOKEN to an engine token.');
// Still taken, for scripts written before; the environment keeps it out of npm's echo and of ps.
if (process.argv.some((arg) => arg === '--token' || arg.startsWith('--token='))) {
  process.stderr.write('warning: --token puts the token where npm echoes it and ps shows it; set ENGINE_TOKEN instead\n');
}
const workers = Number(values.workers);
const failureRate = Number(values['failure-rate']);
if (!Number.isInteger(workers) || workers < 1 || workers > 32) fail('--workers must be an integer from 1 to 32.');
if (!(failureRate >= 0 && failureRate <= 1)) fail('--failure-rate must be a number from 0 to 1.');

const stop = new AbortController();
process.on('SIGINT', () => stop.abort());
process.on('SIGTERM', () => stop.abort());
process.stdout.write(`engine: ${workers} workers against ${values.url}; Ctrl-C stops\n`);
try {
  const tally = await runEngine({
    baseUrl: values.url.replace(/\/+$/, ''),
    token: values.token,
    workers,
    failureRate,
    signal: stop.signal,
    log: (line) => process.stdout.write(`${new Date().toISOString()} ${line}\n`),
  });
  process.stdout.write(
    `engine stopped: ${tally.claimed} claimed, ${tally.succeeded} succeeded, ${tally.failed} failed, ${tally.abandoned} given up\n`,
  );
} catch (error) {
  if (error instanceof EngineStopped || error instanceof TypeError) {
    process.stderr.write(`engine: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
