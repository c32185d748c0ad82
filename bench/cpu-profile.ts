// Summarizes a V8 .cpuprofile (node --cpu-prof): self time per function and per package.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** The profile `node --cpu-prof --cpu-prof-dir=<dir>` wrote for the main thread of process `pid`. */
export function mainThreadProfile(dir: string, pid: number): string {
  const file = readdirSync(dir).find((name) => name.includes(`.${pid}.0.`) && name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no main-thread profile in ${dir}: ${readdirSync(dir).join(', ')}`);
  return join(dir, file);
}

export interface SelfTime {
  name: string;
  /** Where: package name, `node:` internal, or the project file. */
  where: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Share of samples spent idle (waiting on I/O). */
  idleShare: number;
  functions: SelfTime[];
  packages: SelfTime[];
}

/** `node_modules/@scope/pkg/...` → `@scope/pkg`; project files relative; node internals as `node:…`. */
export function locationOf(url: string, root: string): string {
  if (url === '') return '(native)';
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const parts = path.slice(modules + 'node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? path);
  }
  if (path.startsWith('node:')) return path;
  const base = root.endsWith('/') ? root : `${root}/`;
  return path.startsWith(base) ? path.slice(base.length) : path;
}

/**
 * `windowMs`: only the samples of the last `windowMs` before the profile ended (the load phase, without the
 * process start that --cpu-prof also records).
 */
export function summarizeProfile(file: string, root: string, options: { top?: number; windowMs?: number } = {}): ProfileSummary {
  const top = options.top ?? 15;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  const from = options.windowMs === undefined ? -Infinity : profile.endTime - options.windowMs * 1000;
  // timeDeltas[i] is the time before sample i; attribute it to the sample's node (V8's own convention).
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = Math.max(0, profile.timeDeltas[i] ?? 0);
    at += delta;
    if (at < from) continue;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  }
  let totalUs = 0;
  let idleUs = 0;
  const functions = new Map<string, SelfTime>();
  const packages = new Map<string, SelfTime>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    totalUs += us;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const where = locationOf(url, root);
    const name = functionName || '(anonymous)';
    const key = `${name}@${url}:${lineNumber}`;
    const fn = functions.get(key) ?? { name: url ? `${name} (line ${lineNumber + 1})` : name, where, ms: 0, share: 0 };
    fn.ms += us / 1000;
    functions.set(key, fn);
    const pkg = packages.get(where) ?? { name: where, where, ms: 0, share: 0 };
    pkg.ms += us / 1000;
    packages.set(where, pkg);
  }
  const busyMs = (totalUs - idleUs) / 1000;
  const rank = (items: Iterable<SelfTime>) =>
    [...items]
      .map((item) => ({ ...item, share: busyMs > 0 ? item.ms / busyMs : 0 }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top);
  return {
    totalMs: totalUs / 1000,
    idleShare: totalUs > 0 ? idleUs / totalUs : 0,
    functions: rank(functions.values()),
    packages: rank(packages.values()),
  };
}

const isMain = import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  const windowMs = process.env.WINDOW_MS ? Number(process.env.WINDOW_MS) : undefined;
  for (const file of process.argv.slice(2)) {
    const summary = summarizeProfile(file, process.cwd(), { top: 30, ...(windowMs === undefined ? {} : { windowMs }) });
    console.log(`${file}: ${summary.totalMs.toFixed(0)} ms, idle ${(summary.idleShare * 100).toFixed(1)}%`);
    for (const f of summary.functions) console.log(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.ms.toFixed(0).padStart(6)} ms  ${f.name}  [${f.where}]`);
    console.log('  by package:');
    for (const p of summary.packages) console.log(`  ${(p.share * 100).toFixed(1).padStart(5)}%  ${p.ms.toFixed(0).padStart(6)} ms  ${p.name}`);
  }
}
