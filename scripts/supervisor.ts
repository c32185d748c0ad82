// The cluster scripts' supervisor (scripts/cluster.ts, scripts/cluster-ha.ts): a process of the stack that dies
// without being stopped is started again, as systemd's `Restart=always` does in production. A process that dies
// right after each start is started again after a growing pause (up to 5 s), not in a tight loop.
import type { ChildProcess } from 'node:child_process';

export interface SupervisedOptions {
  name: string;
  /** Starts the process (again). */
  start: () => ChildProcess;
  /** false: the process is watched but not started again when it dies (the default: true). */
  restart?: boolean;
  /** Runs after the process died and before it is started again: a fence, say, of what it leaves running. */
  beforeRestart?: () => Promise<void>;
  log?: (line: string) => void;
}

/** A process runs this long for its next death to count as a new one, restarted at once. */
const STABLE_MS = 10_000;
const MAX_PAUSE_MS = 5000;

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

export class Supervised {
  private current: ChildProcess;
  private stopping = false;
  private quickDeaths = 0;
  private waiting: Array<(child: ChildProcess) => void> = [];
  /** Times the process was started again after it died. */
  restarts = 0;

  constructor(private readonly options: SupervisedOptions) {
    this.current = this.launch();
  }

  get name(): string {
    return this.options.name;
  }

  /** The running process (the latest started). */
  get child(): ChildProcess {
    return this.current;
  }

  get pid(): number | undefined {
    return this.current.pid;
  }

  /** Resolves once the current process has exited. */
  get exited(): Promise<void> {
    return exitOf(this.current);
  }

  /** Resolves with the next process started in place of the current one. */
  replaced(): Promise<ChildProcess> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Sends `signal` to the running process as an outage would; it is started again when it dies. */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.current.kill(signal);
  }

  /** Stops supervising, then ends the process: `signal`, and SIGKILL after `graceMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
    this.stopping = true;
    const child = this.current;
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exitOf(child);
    clearTimeout(timer);
  }

  private launch(): ChildProcess {
    const child = this.options.start();
    const startedAt = Date.now();
    child.once('exit', (code, signal) => void this.died(child, startedAt, signal ?? String(code)));
    return child;
  }

  private async died(child: ChildProcess, startedAt: number, how: string): Promise<void> {
    if (this.stopping || child !== this.current || this.options.restart === false) return;
    this.quickDeaths = Date.now() - startedAt < STABLE_MS ? this.quickDeaths + 1 : 0;
    const pause = this.quickDeaths <= 1 ? 0 : Math.min(MAX_PAUSE_MS, 250 * 2 ** (this.quickDeaths - 2));
    this.options.log?.(`${this.options.name} exited (${how}); starting it again${pause ? ` in ${pause} ms` : ''}`);
    await this.options.beforeRestart?.().catch((error: Error) => this.options.log?.(`${this.options.name}: ${error.message}`));
    if (pause) await new Promise((resolve) => setTimeout(resolve, pause));
    if (this.stopping) return;
    this.restarts += 1;
    this.current = this.launch();
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve(this.current);
  }
}
