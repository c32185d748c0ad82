import { CLI_ORIGIN } from '../db/activity.js';
import { findServiceUserByName } from '../auth/service-users.js';
import { createToken, listTokens, MAX_TOKEN_LIFETIME_DAYS, normalizeTokenName, revokeToken, validateTokenExpiry } from '../auth/tokens.js';
import { tokenCapsOf } from '../domain/token-caps.js';
import { ApiError } from '../errors.js';
import { CliError, printList, stringOption, UsageError, type Command } from './commands.js';
import { requireTenant } from './tenant.js';

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
// A datetime must carry its offset: a bare local time would mean different instants on different machines.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})$/i;

function isCalendarDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** How far `timeZone`'s wall clock is ahead of UTC at `instant`, in milliseconds. */
function zoneOffsetMs(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(new Date(instant));
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value);
  const wallClock = Date.UTC(part('year'), part('month') - 1, part('day'), part('hour'), part('minute'), part('second'));
  return wallClock - (instant - (((instant % 1000) + 1000) % 1000));
}

/** The first instant of a calendar day in `timeZone` (the offset read twice: a day may start across a DST change). */
function startOfDayIn(year: number, month: number, day: number, timeZone: string): number {
  const midnight = Date.UTC(year, month - 1, day);
  return midnight - zoneOffsetMs(midnight - zoneOffsetMs(midnight, timeZone), timeZone);
}

/** This machine's time zone (TZ), the one a person at its terminal reads dates in. */
const LOCAL_TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/**
 * `--expires` as an instant. A date alone means the END of that day in `timeZone`, this machine's unless
 * told (the console reads a date the same way, in the browser's zone): "expires on 2027-01-31" reads as
 * "still valid all of the 31st", and a token created for today is still usable today.
 */
export function parseExpiry(value: string, timeZone: string = LOCAL_TIME_ZONE): Date {
  const date = DATE_ONLY.exec(value);
  if (date) {
    const [year, month, day] = [Number(date[1]), Number(date[2]), Number(date[3])];
    if (!isCalendarDate(year, month, day)) throw new UsageError(`--expires: "${value}" is not a calendar date`);
    return new Date(startOfDayIn(year, month, day + 1, timeZone) - 1);
  }
  const dateTime = DATE_TIME.exec(value);
  if (dateTime) {
    const [year, month, day] = [Number(dateTime[1]), Number(dateTime[2]), Number(dateTime[3])];
    const [hour, minute, second] = [Number(dateTime[4]), Number(dateTime[5]), Number(dateTime[6] ?? 0)];
    const instant = new Date(value);
    if (isCalendarDate(year, month, day) && hour < 24 && minute < 60 && second < 60 && !Number.isNaN(instant.getTime())) {
      return instant;
    }
  }
  throw new UsageError(`--expires must be YYYY-MM-DD or an ISO datetime with offset (e.g. 2027-01-31T12:00:00Z), got "${value}"`);
}

function status(token: { expiresAt: Date; revokedAt: Date | null }, now: number): string {
  if (token.revokedAt) return 'revoked';
  return token.expiresAt.getTime() <= now ? 'expired' : 'active';
}

export const tokenCommands: Command[] = [
  {
    name: ['token', 'create'],
    usage: '--tenant <slug> --service-user <name> --expires <YYYY-MM-DD | ISO datetime> [--name <text>] [--json]',
    summary: `create a personal access token (expiry at most ${MAX_TOKEN_LIFETIME_DAYS} days ahead; a date means the end of that day in this machine's time zone, TZ); prints the value alone on stdout, once`,
    options: {
      tenant: { type: 'string' },
      'service-user': { type: 'string' },
      expires: { type: 'string' },
      name: { type: 'string' },
      json: { type: 'boolean' },
    },
    async run({ db, config, out }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const userName = stringOption(input, 'service-user', true);
      const expiresAt = parseExpiry(stringOption(input, 'expires', true).trim());
      let tokenName: string | null;
      try {
        validateTokenExpiry(expiresAt);
      } catch (error) {
        if (error instanceof ApiError) throw new CliError(`--expires: ${error.message}`);
        throw error;
      }
      try {
        tokenName = normalizeTokenName(stringOption(input, 'name', false));
      } catch (error) {
        if (error instanceof ApiError) throw new CliError(`--name: ${error.message}`);
        throw error;
      }
      const user = await findServiceUserByName(db, tenant.id, userName);
      if (!user) throw new CliError(`service user "${userName}" does not exist in tenant "${tenant.slug}"`);
      let created;
      try {
        created = await createToken(
          db,
          { tenantId: tenant.id, serviceUserId: user.id, expiresAt, name: tokenName, createdBy: 'cli', activity: CLI_ORIGIN },
          new Date(),
          tokenCapsOf(config),
        );
      } catch (error) {
        if (error instanceof ApiError) throw new CliError(error.message);
        throw error;
      }
      out(
        input.values.json
          ? // The contract's three keys; the name only when one was given (--name is an addition to the contract).
            JSON.stringify({
              id: created.id,
              token: created.token,
              ...(created.name === null ? {} : { name: created.name }),
              expires_at: created.expiresAt.toISOString(),
            })
          : created.token,
      );
    },
  },
  {
    name: ['token', 'revoke'],
    usage: '<token-id>',
    summary: 'revoke a token; it stops working at once',
    positionals: { min: 1, max: 1 },
    async run({ db, err }, input) {
      const id = input.positionals[0]!;
      const result = await revokeToken(db, id, undefined, new Date(), CLI_ORIGIN);
      if (result === 'not_found') throw new CliError(`token "${id}" does not exist`);
      err(result === 'revoked' ? `revoked ${id}` : `${id} was already revoked`);
    },
  },
  {
    name: ['token', 'list'],
    usage: '--tenant <slug> [--json]',
    summary: "list a tenant's tokens without their values (JSON lines with --json)",
    options: { tenant: { type: 'string' }, json: { type: 'boolean' } },
    async run({ db, out }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const tokens = await listTokens(db, tenant.id);
      const now = Date.now();
      const iso = (date: Date | null) => date?.toISOString() ?? null;
      printList(out, input, tokens, {
        json: (t) => ({
          id: t.id,
          name: t.name,
          prefix: t.prefix,
          service_user: t.serviceUserName,
          service_user_id: t.serviceUserId,
          status: status(t, now),
          expires_at: iso(t.expiresAt),
          created_at: iso(t.createdAt),
          last_used_at: iso(t.lastUsedAt),
          revoked_at: iso(t.revokedAt),
        }),
        header: ['ID', 'NAME', 'PREFIX', 'SERVICE USER', 'STATUS', 'EXPIRES', 'LAST USED'],
        row: (t) => [
          t.id,
          t.name ?? '-',
          t.prefix,
          t.serviceUserName,
          status(t, now),
          t.expiresAt.toISOString(),
          t.lastUsedAt?.toISOString() ?? '-',
        ],
      });
    },
  },
];
