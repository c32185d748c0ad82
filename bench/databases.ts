// The benchmark's PostgreSQL databases (bench_…), kept between runs so that the data is loaded once.

import pg from 'pg';

/** The maintenance database the benchmark connects to for CREATE/DROP DATABASE. */
export const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

const withAdmin = <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => withDatabase(ADMIN_URL, work);

export async function serverVersion(): Promise<string> {
  return withAdmin(async (client) => ((await client.query('SHOW server_version')).rows[0] as { server_version: string }).server_version);
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
