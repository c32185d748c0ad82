// The benchmark's own PostgreSQL databases (bench_…) and PGlite data directories. Each one created is
// remembered, and `dropAllDatabases()` removes them, also when the run fails.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** The maintenance database the benchmark connects to for CREATE/DROP DATABASE. */
export const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const databases = new Set<string>();
const directories = new Set<string>();

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

const withAdmin = <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => withDatabase(ADMIN_URL, work);

export async function createDatabase(suffix: string): Promise<string> {
  const name = `bench_${Date.now().toString(36)}_${process.pid}_${suffix}`;
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`bad database name ${name}`);
  await withAdmin((client) => client.query(`CREATE DATABASE ${name}`));
  databases.add(name);
  return name;
}

export async function dropDatabase(name: string): Promise<void> {
  await withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  databases.delete(name);
}

export async function dropAllDatabases(): Promise<void> {
  for (const name of [...databases]) {
    await dropDatabase(name).catch((error: unknown) => {
      process.stderr.write(`bench: could not drop database ${name}: ${String(error)}\n`);
    });
  }
}

export async function serverVersion(): Promise<string> {
  return withAdmin(async (client) => ((await client.query('SHOW server_version')).rows[0] as { server_version: string }).server_version);
}

export function tempDirectory(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `bench-${label}-`));
  directories.add(dir);
  return dir;
}

export function removeAllDirectories(): void {
  for (const dir of directories) rmSync(dir, { recursive: true, force: true });
  directories.clear();
}

/** Runs `work` with a client on the given database. */
export async function withDatabase<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
