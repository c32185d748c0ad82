import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { dbCommands } from './cli/db.js';
import { exportCommands } from './cli/export.js';
import { CliError, UsageError, type Command, type CommandInput } from './cli/commands.js';
import { seedCommands } from './cli/seed.js';
import { memberCommands } from './cli/member.js';
import { oauthCommands } from './cli/oauth.js';
import { serviceUserCommands } from './cli/service-user.js';
import { tenantCommands } from './cli/tenant.js';
import { tokenCommands } from './cli/token.js';
import { webhookCommands } from './cli/webhooks.js';
import { openDatabase, type Database } from './db/client.js';
import { migrate, MigrationError } from './db/migrate.js';
import { UNREACHABLE_CODES } from './db/unreachable.js';
import { ConfigError, parseConfig, type Config } from './env.js';

/** Every command the CLI knows; a new feature appends its module's array here. */
const COMMANDS: Command[] = [
  ...dbCommands,
  ...tenantCommands,
  ...seedCommands,
  ...serviceUserCommands,
  ...memberCommands,
  ...tokenCommands,
  ...oauthCommands,
  ...webhookCommands,
  ...exportCommands,
];

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  /** Opens the database the command works on; tests hand in one they hold open (closing it is theirs). */
  openDatabase?: (config: Config) => Promise<Database>;
}

const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
};

function commandLine(command: Command): string {
  return [...command.name, command.usage].filter(Boolean).join(' ');
}

/** Help text is read in a terminal: no line wider than this, as most terminals open. */
export const HELP_WIDTH = 80;

/** `text` in lines of at most `width` columns (a word longer than that stays whole), each after `indent`. */
function wrapped(text: string, indent: string, width = HELP_WIDTH): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== '' && indent.length + line.length + 1 + word.length > width) {
      lines.push(`${indent}${line}`);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(`${indent}${line}`);
  return lines;
}

function usage(commands: Command[] = COMMANDS): string {
  return [
    'usage: npm run --silent cli -- <command> [options]',
    '',
    'commands:',
    ...commands.flatMap((c) => [...wrapped(commandLine(c), '  '), ...wrapped(c.summary, '      ')]),
    '',
    ...wrapped('Database: DATABASE_URL (PostgreSQL) or else PGlite under DATA_DIR (default ./.data), as for the server.', ''),
    '',
  ].join('\n');
}

/** The command whose name is the longest prefix of argv, so `seed demo` and a future `seed` never clash. */
function findCommand(argv: string[], commands: Command[]): Command | undefined {
  let found: Command | undefined;
  for (const command of commands) {
    const matches = command.name.every((word, i) => argv[i] === word);
    if (matches && command.name.length > (found?.name.length ?? 0)) found = command;
  }
  return found;
}

/** PostgreSQL refused the login: wrong password (28P01), no such database (3D000). */
const LOGIN_REFUSED_CODES = ['28P01', '3D000'];

function oneLine(message: string): string {
  return message.trim().replace(/\s*\n\s*/g, '; ');
}

/** Turns a failure into the one line a user sees. Driver errors get a hint of where they came from. */
function describeError(error: unknown): string {
  if (error instanceof ConfigError) return `invalid configuration: ${error.problems.join('; ')}`;
  if (error instanceof CliError || error instanceof MigrationError) return oneLine(error.message);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (UNREACHABLE_CODES.includes(code) || LOGIN_REFUSED_CODES.includes(code))) {
    return `cannot connect to the database: ${oneLine((error as Error).message)}`;
  }
  return oneLine(error instanceof Error ? error.message : String(error));
}

function openConfiguredDatabase(config: Config): Promise<Database> {
  return openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    localSocket: 'join',
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS === 'on',
  });
}

/** Runs one CLI invocation and returns the exit code; never throws. */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  const out = (line: string) => io.stdout(`${line}\n`);
  const err = (line: string) => io.stderr(`${line}\n`);

  if (argv.length === 0 || ['help', '--help', '-h'].includes(argv[0]!)) {
    (argv.length === 0 ? io.stderr : io.stdout)(usage());
    return argv.length === 0 ? 2 : 0;
  }
  const command = findCommand(argv, COMMANDS);
  if (!command) {
    err(`error: unknown command: ${argv.join(' ')}`);
    io.stderr(usage());
    return 2;
  }

  let input: CommandInput;
  try {
    const parsed = parseArgs({
      args: argv.slice(command.name.length),
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    if (parsed.values.help) {
      out([...wrapped(`usage: npm run --silent cli -- ${commandLine(command)}`, ''), '', ...wrapped(command.summary, '')].join('\n'));
      return 0;
    }
    const { min, max } = command.positionals ?? { min: 0, max: 0 };
    if (parsed.positionals.length < min) throw new UsageError('missing argument');
    if (parsed.positionals.length > max) throw new UsageError(`unexpected argument "${parsed.positionals[max]}"`);
    input = { positionals: parsed.positionals, values: parsed.values };
    command.check?.(input);
  } catch (error) {
    err(`error: ${oneLine(error instanceof Error ? error.message : String(error))}`);
    err(`usage: npm run --silent cli -- ${commandLine(command)}`);
    return 2;
  }

  let db: Database | undefined;
  try {
    const config = parseConfig(io.env);
    db = await (io.openDatabase ?? openConfiguredDatabase)(config);
    // Migrating first lets every command run against a fresh database, as the server does at start.
    const appliedMigrations = await migrate(db);
    await command.run({ db, config, appliedMigrations, out, err, io }, input);
    return 0;
  } catch (error) {
    err(`error: ${describeError(error)}`);
    if (error instanceof UsageError) {
      err(`usage: npm run --silent cli -- ${commandLine(command)}`);
      return 2;
    }
    return 1;
  } finally {
    await db?.close().catch(() => {});
  }
}

function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  // exitCode, not exit(): stdout to a pipe is written asynchronously and must drain first.
  process.exitCode = await runCli(process.argv.slice(2));
}
