import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that take longest (with FUZZ_HEAVY=1 on both databases; much of it waiting on
 * processes, leases, browsers or the balancer), slowest first. The workers take files in this order, so the long
 * ones start at once and overlap instead of ending the run alone; the rest follow in vitest's own order (a
 * previous run's durations when it has them, else file size). A fresh clone, as CI runs, has no previous run.
 */
const SLOWEST = [
  'fuzz',
  'write-concurrency',
  'openapi-property',
  'docs-examples',
  'cluster',
  'pages',
  'local-socket',
  'auth-matrix',
  'sync-counts',
  'shutdown',
  'deadline',
  'cli',
  'seed',
  'scheduler',
  'webhooks-processes',
  'token-cache',
  'write-side-schema',
  'webhooks',
  'live',
  'migrations',
  'auth-core',
];

export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = SLOWEST.findIndex((name) => file.moduleId.endsWith(`/${name}.test.ts`));
      return index < 0 ? SLOWEST.length : index;
    };
    return [...(await super.sort(files))].sort((a, b) => rank(a) - rank(b));
  }
}
