import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgliteOptions } from '../src/db/client.js';
import { admittedByLocalSocket, localSocketDir, localSocketPath, localSocketUrl, serveLocalSocket } from '../src/db/local-socket.js';
import { migratedPgliteDataDir } from './fixtures/databases.js';
import { printedToken, ROOT, serverEnvironment, startServer, waitForStderr, type RunningServer } from './fixtures/server-process.js';

// While a server runs on PGlite it holds the data directory; the CLI then works through the server's socket.
// The CLI runs as `node dist/cli.js` (what `npm run cli` runs), and through npm where the command line is the one
// users are told to type (README, and what a restart prints).

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function temporaryDirectory(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A shell command line, run as a user would type it, in the project root with the server's environment. */
function shell(commandLine: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', commandLine], { cwd: ROOT, env: serverEnvironment(env), timeout: 90_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

async function getConnections(server: RunningServer, token: string): Promise<number> {
  const response = await fetch(`${server.url}/api/v1/integrations/connected?select=id`, { headers: { authorization: `Token ${token}` } });
  await response.body?.cancel();
  return response.status;
}

async function stop(server: RunningServer): Promise<void> {
  process.kill(server.child.pid!, 'SIGTERM');
  expect((await server.exited).code).toBe(0);
}

describe('the CLI beside a server on PGlite', () => {
  it("works through the server, both see each other's writes, and a restart prints the command that makes a token", async () => {
    const dataDir = migratedPgliteDataDir('gw-beside-');
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = { DATA_DIR: dataDir };
    const server = await startServer(env);
    cleanups.push(server.kill);
    const firstToken = await printedToken(server);

    // Only the owner may enter the socket's directory, so only the owner may connect.
    expect(statSync(localSocketDir(dataDir)).mode & 0o777).toBe(0o700);
    expect(statSync(localSocketPath(dataDir)).mode & 0o777).toBe(0o600);

    // The CLI's write, seen by the server: a token created beside it authenticates at once (made with the
    // README's command line).
    const created = await shell('node dist/cli.js token create --tenant demo --service-user demo-admin --expires 2099-01-01 --json', env);
    expect(created.code, created.stderr).toBe(1);
    expect(created.stderr).toMatch(/at most 366 days ahead/);
    const expires = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    const token = await shell(`npm run --silent cli -- token create --tenant demo --service-user demo-admin --expires ${expires}`, env);
    expect(token, token.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(await getConnections(server, token.stdout.trim())).toBe(200);

    // The server's write, seen by the CLI: a service user created over GraphQL is listed.
    const name = `beside-${Date.now()}`;
    const mutation = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Token ${firstToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `mutation { createServiceUser(name: "${name}", role: reader) { id } }` }),
    });
    expect(mutation.status).toBe(200);
    const listed = await shell('node dist/cli.js service-user list --tenant demo --json', env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).name),
    ).toContain(name);

    // The CLI's export reads beside the server too (binary COPY through the local socket): every run the API counts.
    const exported = await shell('node dist/cli.js export syncs --tenant demo --format ndjson', env);
    expect(exported.code, exported.stderr).toBe(0);
    const runs = exported.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string });
    const page = await fetch(`${server.url}/api/v1/integrations/syncs?limit=1`, { headers: { authorization: `Token ${firstToken}` } });
    const counted = (await page.json()) as { data: { id: string }[]; meta: { pagination: { total_items: number } } };
    expect(runs.length).toBe(counted.meta.pagination.total_items);
    expect(runs[0]!.id).toBe(counted.data[0]!.id);

    // Revoke every token of demo, then restart.
    const tokens = await shell('node dist/cli.js token list --tenant demo --json', env);
    expect(tokens.code, tokens.stderr).toBe(0);
    const ids = tokens.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).id as string);
    const revoked = await Promise.all(ids.map((id) => shell(`node dist/cli.js token revoke ${id}`, env)));
    expect(revoked.map((r) => r.code)).toEqual(ids.map(() => 0));
    expect(await getConnections(server, firstToken)).toBe(401);
    await stop(server);

    // The restart finds no usable admin token and prints the exact command; run as printed, it gives one.
    const restarted = await startServer(env);
    cleanups.push(restarted.kill);
    const advice = await waitForStderr(restarted, (text) => /no usable admin token[^\n]*\n\n {2}[^\n]+\n/.test(text));
    expect(advice).not.toMatch(/igw_pat_/);
    const command = /no usable admin token[^\n]*\n\n {2}([^\n]+)\n/.exec(advice)![1]!;
    expect(command).toMatch(
      /^DATA_DIR='[^']+' npm run --silent cli -- token create --tenant demo --service-user demo-admin --expires \d{4}-\d{2}-\d{2}$/,
    );
    const fresh = await shell(command, {});
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(await getConnections(restarted, token.stdout.trim())).toBe(401);
    expect(await getConnections(restarted, fresh.stdout.trim())).toBe(200);
    await stop(restarted);
  }, 180_000);
});

describe("the local socket next to the server's own queries", () => {
  let db: PGlite;
  let dataDir: string;
  let stopSocket: () => Promise<void>;
  const clients: pg.Client[] = [];
  const connect = async () => {
    const client = new pg.Client({ connectionString: localSocketUrl(dataDir) });
    client.on('error', () => {});
    await client.connect();
    clients.push(client);
    return client;
  };
  const names = async () => (await db.query<{ name: string }>('SELECT name FROM t ORDER BY name')).rows.map((r) => r.name);

  beforeAll(async () => {
    dataDir = temporaryDirectory('gw-socket-');
    db = await PGlite.create('memory://', await pgliteOptions());
    await db.exec('CREATE TABLE t (name text PRIMARY KEY)');
    stopSocket = await serveLocalSocket(db, dataDir, { maxConnections: 2 });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => {})));
    await stopSocket?.();
    await db?.close();
  });

  it("keeps the server's query out of a client's transaction: the client's rollback does not undo it", async () => {
    const client = await connect();
    await client.query('BEGIN');
    await client.query('INSERT INTO t VALUES ($1)', ['client']);
    // Issued while the client's transaction is open; it must wait, not run inside it.
    const serverInsert = db.query('INSERT INTO t VALUES ($1)', ['server']);
    await client.query('ROLLBACK');
    await serverInsert;
    expect(await names()).toEqual(['server']);
    await client.end();
  });

  it('rolls back the work of a client that disconnects inside a transaction, and the server goes on', async () => {
    const client = await connect();
    await client.query('BEGIN');
    await client.query('INSERT INTO t VALUES ($1)', ['abandoned']);
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    await db.query('INSERT INTO t VALUES ($1)', ['after']);
    expect(await names()).toEqual(['after', 'server']);
  });

  it('admits a connection over the limit once one is free, retrying meanwhile', async () => {
    const holders = [await connect(), await connect()];
    let attempts = 0;
    let admittedClient: pg.Client | undefined;
    const admitted = admittedByLocalSocket(dataDir, async () => {
      attempts++;
      // The first attempt finds both connections taken; before the second, one of them ends.
      if (attempts === 2) await holders[0]!.end();
      const client = new pg.Client({ connectionString: localSocketUrl(dataDir) });
      client.on('error', () => {});
      await client.connect();
      await client.query('SELECT 1');
      admittedClient = client;
    });
    await admitted;
    clients.push(admittedClient!);
    expect(attempts).toBeGreaterThan(1);
    expect((await admittedClient!.query<{ n: number }>('SELECT count(*)::int AS n FROM t')).rows[0]!.n).toBe(2);
  });
});
