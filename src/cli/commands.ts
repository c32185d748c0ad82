import type { ParseArgsConfig } from 'node:util';
import type { Database } from '../db/client.js';
import type { Config } from '../env.js';

/**
 * The CLI is a table of commands. A feature adds its commands in its own module (`src/cli/<feature>.ts`
 * exporting `Command[]`) and lists that array in `src/cli.ts`; the dispatcher does argument parsing,
 * configuration, the database, migrations and error reporting for all of them.
 */
export interface Command {
  /** The words that select the command, e.g. `['tenant', 'create']`. */
  name: string[];
  /** What follows the name in the usage line, e.g. `<slug> [--name <name>]`. */
  usage: string;
  summary: string;
  /** `node:util` parseArgs options; parsing is strict, so an unknown option is a usage error. */
  options?: NonNullable<ParseArgsConfig['options']>;
  /** How many positional arguments may follow the name (default none). */
  positionals?: { min: number; max: number };
  /**
   * Validates the arguments (throwing UsageError) before the environment is read or a database opened, so a
   * typo never boots PGlite or creates a data directory.
   */
  check?(input: CommandInput): void;
  run(context: CommandContext, input: CommandInput): Promise<void>;
}

export interface CommandInput {
  positionals: string[];
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
}

interface CommandContext {
  /** Migrated already: every command may assume the current schema. */
  db: Database;
  /** The environment, checked as the server checks it (caps and keys the command applies too). */
  config: Config;
  /** Migrations this invocation applied before the command ran. */
  appliedMigrations: string[];
  /** One line to stdout: the command's result, for scripts (`id=$(… tenant create acme)`). */
  out(line: string): void;
  /** One line to stderr: progress and reports meant for people. */
  err(line: string): void;
  /** The streams as they are, for output that is not lines (an export, a progress bar). */
  io: { stdout(text: string): void; stderr(text: string): void };
}

/** An expected failure: its message alone goes to stderr and the process exits 1, without a stack trace. */
export class CliError extends Error {
  override name = 'CliError';
}

/** Wrong arguments: the message and the command's usage go to stderr, exit 2. */
export class UsageError extends CliError {
  override name = 'UsageError';
}

export function stringOption(input: CommandInput, name: string, required: true): string;
export function stringOption(input: CommandInput, name: string, required?: false): string | undefined;
export function stringOption(input: CommandInput, name: string, required = false): string | undefined {
  const value = input.values[name];
  if (value === undefined) {
    if (required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} needs a value`);
  return value;
}

export function integerOption(input: CommandInput, name: string, required: true): number;
export function integerOption(input: CommandInput, name: string, required?: false): number | undefined;
export function integerOption(input: CommandInput, name: string, required = false): number | undefined {
  const raw = required ? stringOption(input, name, true) : stringOption(input, name);
  if (raw === undefined) return undefined;
  const value = Number(raw.replace(/_/g, ''));
  if (!/^\d[\d_]*$/.test(raw) || !Number.isSafeInteger(value)) {
    throw new UsageError(`--${name} must be a non-negative integer, got "${raw}"`);
  }
  return value;
}

/** Left-aligned columns; for people, so `--json` exists for scripts. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** A list on stdout: one JSON object a line with --json (for scripts), else a table (for people). */
export function printList<T>(
  out: (line: string) => void,
  input: CommandInput,
  items: readonly T[],
  print: { json: (item: T) => object; header: string[]; row: (item: T) => string[] },
): void {
  if (input.values.json) for (const item of items) out(JSON.stringify(print.json(item)));
  else for (const line of table(print.header, items.map(print.row))) out(line);
}
