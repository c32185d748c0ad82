import { randomBytes } from 'node:crypto';
import { SingleBar } from 'cli-progress';
import { SignJWT } from 'jose';
import { createLogger } from '../logger.js';
import { INTEGRATIONS_BASE } from '../paths.js';
import { createGateway } from '../http/yoga.js';
import { CliError, type Command, stringOption, UsageError } from './commands.js';

// `export <syncs|connected> --tenant <slug> --format <csv|ndjson> [--filter <param=value>]…`: a tenant's list to
// stdout, a progress bar on stderr. The one command that goes through the API: it runs the REST export
// (src/rest/export.ts) in process, over the same database, so the file holds exactly the records the API
// answers, with the same filters. It authenticates with a reader JWT it signs for itself with a key made for
// this run alone (no credential is created or kept).

/** Off a terminal, how often a progress line is written. */
const PLAIN_PROGRESS_EVERY_MS = 1000;

const LISTS = { syncs: 'syncs', connected: 'connected' } as const;
const ACCEPT = { ndjson: 'application/x-ndjson', csv: 'text/csv' } as const;
const NEWLINE = 0x0a;

function formatOf(value: string): keyof typeof ACCEPT {
  if (value !== 'csv' && value !== 'ndjson') throw new UsageError(`--format must be csv or ndjson, got "${value}"`);
  return value;
}

function listOf(value: string): keyof typeof LISTS {
  if (value !== 'syncs' && value !== 'connected') throw new UsageError(`export syncs or connected, not "${value}"`);
  return value;
}

/** `--filter status=eq.failed --filter select=id,status` → the REST query string (any parameter the list takes). */
function queryOf(filters: unknown): URLSearchParams {
  const query = new URLSearchParams();
  for (const filter of [filters ?? []].flat()) {
    const text = String(filter);
    const equals = text.indexOf('=');
    if (equals <= 0) throw new UsageError(`--filter takes a REST query parameter, e.g. status=eq.failed; got "${text}"`);
    query.append(text.slice(0, equals), text.slice(equals + 1));
  }
  return query;
}

/** The API's answer to a refused request, as one line. */
async function refusal(response: Response): Promise<string> {
  const text = await response.text();
  try {
    return (JSON.parse(text) as { msg?: string }).msg ?? text;
  } catch {
    return text;
  }
}

export const exportCommands: Command[] = [
  {
    name: ['export'],
    usage: '<syncs|connected> --tenant <slug> --format <csv|ndjson> [--filter <param=value>]...',
    summary: "write a tenant's sync history (or connections) to stdout as CSV or NDJSON, with the REST filters; progress on stderr",
    positionals: { min: 1, max: 1 },
    options: { tenant: { type: 'string' }, format: { type: 'string' }, filter: { type: 'string', multiple: true } },
    check(input) {
      listOf(input.positionals[0]!);
      formatOf(stringOption(input, 'format', true));
      stringOption(input, 'tenant', true);
      queryOf(input.values.filter);
    },
    async run({ db, io }, input) {
      const list = listOf(input.positionals[0]!);
      const format = formatOf(stringOption(input, 'format', true));
      const slug = stringOption(input, 'tenant', true);
      const query = queryOf(input.values.filter);
      const tenant = await db.prisma.tenant.findUnique({ where: { slug }, select: { id: true } });
      if (!tenant) throw new CliError(`no tenant with slug "${slug}"`);

      const secret = randomBytes(32).toString('base64url');
      const gateway = createGateway({
        db,
        logger: createLogger('silent'),
        config: {
          JWT_SECRET: secret,
          JWT_PUBLIC_KEY: undefined,
          JWT_JWKS_URL: undefined,
          JWT_ISSUER: undefined,
          JWT_AUDIENCE: undefined,
          RATE_LIMIT_PER_MINUTE: 0,
        },
      });
      try {
        const token = await new SignJWT({ tenant_id: tenant.id, role: 'reader' })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject('cli-export')
          .setIssuedAt()
          .setExpirationTime('12h')
          .sign(new TextEncoder().encode(secret));
        const url = (extra: string) => `http://cli.local${INTEGRATIONS_BASE}/${LISTS[list]}?${query}${extra}`;
        const headers = { authorization: `Bearer ${token}` };

        // The total, for the bar: the list's own count of the same question.
        const counted = await gateway.fetch(url(`${query.size > 0 ? '&' : ''}limit=1`), { headers });
        if (counted.status !== 200) throw new CliError(await refusal(counted));
        const meta = ((await counted.json()) as { meta: { pagination: { total_items?: number; total?: number } } }).meta.pagination;
        const total = meta.total_items ?? meta.total ?? 0;

        const response = await gateway.fetch(url(''), { headers: { ...headers, accept: ACCEPT[format] } });
        if (response.status !== 200) throw new CliError(await refusal(response));
        // A bar redrawn in place on a terminal; elsewhere (a file, a pipe, CI) a plain line now and then, with no
        // cursor codes in it.
        const onTerminal = process.stderr.isTTY === true;
        const bar = onTerminal
          ? new SingleBar({
              stream: {
                write: (text: string) => {
                  io.stderr(text);
                  return true;
                },
                isTTY: true,
                columns: 80,
                cursorTo: () => true,
                clearLine: () => true,
                moveCursor: () => true,
              } as never,
              format: '{bar} {percentage}% | {value}/{total} rows | {rate} rows/s | {duration_formatted}',
              etaBuffer: 50,
            })
          : null;
        bar?.start(total, 0, { rate: 0 });
        const started = performance.now();
        let reportedAt = started;
        let rows = format === 'csv' ? -1 : 0;
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          for (const byte of chunk) if (byte === NEWLINE) rows += 1;
          io.stdout(Buffer.from(chunk).toString('utf8'));
          bar?.update(Math.max(rows, 0), { rate: Math.round(rows / ((performance.now() - started) / 1000)) });
          if (!bar && performance.now() - reportedAt >= PLAIN_PROGRESS_EVERY_MS) {
            reportedAt = performance.now();
            io.stderr(`${Math.max(rows, 0)} of ${total} rows\n`);
          }
        }
        bar?.update(Math.max(rows, 0));
        bar?.stop();
        io.stderr(`exported ${Math.max(rows, 0)} rows\n`);
      } finally {
        await gateway.dispose();
      }
    },
  },
];
