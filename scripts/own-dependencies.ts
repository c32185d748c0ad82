// A tool with a dependency set of its own (DIR/package.json and DIR/package-lock.json) beside the project's:
// the benchmark's PostGraphile peer, the contract test's Prism. Their packages declare newer Nodes than the
// system's npm may run on, so the project's install leaves them out and they are installed on first use, with
// the project's Node.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** `npm ci` in `dir` on this process's Node, unless each dependency is installed at its pinned version already. */
export function installOwnDependencies(dir: string): void {
  const { dependencies = {} } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  const installed = (name: string, version: string) => {
    const manifest = join(dir, 'node_modules', name, 'package.json');
    return existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version === version;
  };
  if (Object.entries(dependencies).every(([name, version]) => installed(name, version))) return;
  // npm's own script on this Node: run by the npm on PATH, it would check the packages' engines against its Node.
  const npm = process.env.npm_execpath;
  const [command, args] = npm ? [process.execPath, [npm]] : ['npm', []];
  execFileSync(command, [...args, 'ci', '--prefix', dir, '--no-audit', '--no-fund'], { stdio: 'inherit' });
}
