// Every shell example of README.md and docs/ runs here, against a real server started as a reader starts it, so
// a page that drifts from the code fails the suite. The convention the pages follow:
// - a fenced block with the info string `sh` runs; `sh no-run` does not (its text says why);
// - the blocks of one page run in order, as one bash script (`set -euo pipefail`), so a variable or function
//   one block defines is there for the next; background jobs a page starts are stopped when it ends;
// - `$API` is the server's base URL and `$TOKEN` an admin token of the demo tenant;
// - every curl must answer 2xx, unless a comment on its command names the statuses it answers (`# 404`).
// Pages are found by walking README.md and docs/, so a page added later is covered without a change here.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './fixtures/databases.js';
import { documentationPages } from './fixtures/documentation.js';
import { WEBHOOK_TEST_KEY } from './fixtures/gateway.js';
import { printedToken, ROOT, type RunningServer, startServer } from './fixtures/server-process.js';

/** Each page's own time: a page waits for the scheduler, the engine or a webhook at most a few seconds each. */
const PAGE_TIMEOUT_MS = 120_000;

interface ShellBlock {
  /** 1-based line of the page where the block's first command is. */
  firstLine: number;
  lines: string[];
}

/** The page's fenced blocks whose info string is exactly `sh`. */
function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let open: ShellBlock | null = null;
  let fenced = false;
  markdown.split('\n').forEach((line, index) => {
    const fence = /^\s*(```+|~~~+)\s*(.*?)\s*$/.exec(line);
    if (fence && !fenced) {
      fenced = true;
      if (fence[2] === 'sh') open = { firstLine: index + 2, lines: [] };
    } else if (fence && fence[2] === '') {
      fenced = false;
      if (open) blocks.push(open);
      open = null;
    } else if (open) {
      open.lines.push(line);
    }
  });
  return blocks;
}

/**
 * The HTTP statuses a command's comment names (`curl … # 201, then 404`): every three-digit number from 100 to
 * 599 in a comment on any line of the command (its `\`-continued lines included). Empty: it must answer 2xx.
 */
function expectedStatuses(commandLines: readonly string[]): string[] {
  const comments = commandLines.map((line) => /(?:^|\s)#\s(.*)$/.exec(line)?.[1] ?? '');
  return [...new Set(comments.join(' ').match(/\b[1-5]\d\d\b/g) ?? [])];
}

/** The prelude every page's script starts with: strict mode, the curl check, and the jobs stopped at the end. */
const PRELUDE = [
  'set -Eeuo pipefail',
  `trap 'echo "script line $LINENO: a command exited $?" >&2' ERR`,
  `trap 'kill $(jobs -p) 2>/dev/null || true' EXIT`,
  '# Each curl answers a 2xx, unless the comment of its command names other statuses (__EXPECTED, by script line).',
  'curl() {',
  '  local line=$' + '{BASH_LINENO[0]} headers code=0 status expected',
  '  headers=$(mktemp)',
  '  command curl -D "$headers" "$@" || code=$?',
  `  status=$(grep -aoE '^HTTP/[0-9.]+ [0-9]{3}' "$headers" | tail -1 | awk '{print $2}')`,
  '  rm -f "$headers"',
  '  expected=$' + '{__EXPECTED[$line]:-}',
  '  if [ "$code" -ne 0 ]; then echo "script line $line: curl exited $code (HTTP $status)" >&2; return "$code"; fi',
  '  if [ -z "$expected" ]; then [[ $status == 2?? ]] && return 0; else [[ " $expected " == *" $status "* ]] && return 0; fi',
  '  echo "script line $line: HTTP $status, expected $' + '{expected:-2xx}" >&2',
  '  return 22',
  '}',
].join('\n');

/** One bash script for the page's blocks, and the page line each script line came from. */
function pageScript(blocks: readonly ShellBlock[]): { script: string; pageLineOf: (scriptLine: number) => number | undefined } {
  const prelude = PRELUDE.split('\n');
  const body: string[] = [];
  const origin: (number | undefined)[] = [];
  const expected = new Map<number, string[]>();
  for (const block of blocks) {
    let command: number[] = [];
    block.lines.forEach((line, i) => {
      body.push(line);
      origin.push(block.firstLine + i);
      command.push(body.length);
      if (!/\\\s*$/.test(line)) {
        const statuses = expectedStatuses(command.map((n) => body[n - 1]!));
        if (statuses.length > 0) for (const n of command) expected.set(n, statuses);
        command = [];
      }
    });
  }
  // declare -A goes first, so the prelude's line count is known when the body's line numbers are written.
  const offset = prelude.length + 1;
  const table = `declare -A __EXPECTED=(${[...expected].map(([n, statuses]) => `[${n + offset}]="${statuses.join(' ')}"`).join(' ')})`;
  return {
    script: [table, ...prelude, ...body].join('\n'),
    pageLineOf: (scriptLine) => origin[scriptLine - offset - 1],
  };
}

async function runPage(page: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const { script, pageLineOf } = pageScript(shellBlocks(readFileSync(join(ROOT, page), 'utf8')));
  const dir = mkdtempSync(join(tmpdir(), 'docs-example-'));
  const file = join(dir, 'page.sh');
  writeFileSync(file, script);
  const child = spawn('bash', [file], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), PAGE_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // the page's processes have all ended
  }
  rmSync(dir, { recursive: true, force: true });
  // Say where in the page a failure is: bash and the curl check name script lines.
  const located = output.replace(/(?:script line|line) (\d+)/g, (text, n: string) => {
    const line = pageLineOf(Number(n));
    return line === undefined ? text : `${page}:${line}`;
  });
  return { code, output: located };
}

const pages = documentationPages();

describe('the shell examples of README.md and docs/', () => {
  it('finds the pages and their blocks', () => {
    expect(pages).toContain('README.md');
    expect(pages.some((page) => page.startsWith('docs/tutorial/'))).toBe(true);
    expect(shellBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8')).length).toBeGreaterThan(0);
  });

  it('names only files that exist (a code map that drifts from the tree fails here)', () => {
    const missing = pages.flatMap((page) =>
      [...readFileSync(join(ROOT, page), 'utf8').matchAll(/\b((?:src|test|bench|scripts|schema|prisma|examples|deploy)\/[\w./-]*\w)/g)]
        .map((match) => match[1]!)
        .filter((path) => !path.includes('<') && !path.includes('*') && !existsSync(join(ROOT, path)))
        .map((path) => `${page}: ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it('documents every environment variable the server reads', () => {
    const names = [...readFileSync(join(ROOT, 'src/env.ts'), 'utf8').matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)].map((match) => match[1]!);
    const documentation = pages.map((page) => readFileSync(join(ROOT, page), 'utf8')).join('\n');
    expect(names.length).toBeGreaterThan(20);
    expect(names.filter((name) => !documentation.includes(`\`${name}\``))).toEqual([]);
  });

  it('reads the statuses a comment names, and only from comments', () => {
    expect(expectedStatuses(['curl -s "$API/x"    # 404, then 200'])).toEqual(['404', '200']);
    expect(expectedStatuses(['curl -s "$API/x?limit=500"'])).toEqual([]);
    expect(expectedStatuses(['curl -s -X POST "$API/x" \\', '  -d "{}"   # 201 Created'])).toEqual(['201']);
  });
});

const kinds = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres' as const] : [])] as const;

describe.each(kinds)('the pages run on %s', (kind) => {
  let server: RunningServer | undefined;
  let db: TestDatabase | undefined;
  let dataDir: string | undefined;
  let env: Record<string, string> = {};

  beforeAll(async () => {
    // As a reader starts it (a new data directory: the demo seed and its printed admin token), with webhooks
    // allowed to reach the receiver on this machine, as the pages that run one say to start it.
    const common = { WEBHOOK_ALLOW_PRIVATE: '1', RATE_LIMIT_PER_MINUTE: '0' };
    if (kind === 'pglite') {
      dataDir = mkdtempSync(join(tmpdir(), 'docs-pglite-'));
      server = await startServer({ ...common, DATA_DIR: dataDir });
      env = { API: server.url.replace(/\/$/, ''), TOKEN: await printedToken(server), DATA_DIR: dataDir };
    } else {
      const seeded = inject('seededDatabases').postgres!;
      db = await createTestDatabase('postgres', { template: seeded.template });
      // PostgreSQL seals webhook secrets only with a configured key (docs/reference/security.md).
      server = await startServer({ ...common, DATABASE_URL: db.url!, SEED: 'none', WEBHOOK_SECRET_KEY: WEBHOOK_TEST_KEY });
      env = { API: server.url.replace(/\/$/, ''), TOKEN: seeded.tenants.demo.adminToken, DATABASE_URL: db.url! };
    }
  }, 120_000);

  afterAll(async () => {
    await server?.kill();
    await db?.dispose();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const runnable = pages.filter((page) => shellBlocks(readFileSync(join(ROOT, page), 'utf8')).length > 0);
  it.each(runnable)(
    '%s',
    async (page) => {
      const { code, output } = await runPage(page, env);
      expect(code, output).toBe(0);
    },
    PAGE_TIMEOUT_MS + 10_000,
  );
});
