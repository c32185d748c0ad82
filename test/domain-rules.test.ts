import { describe, expect, it } from 'vitest';
import { parseConnectionPatch, parseCreateConnection } from '../src/domain/connection-input.js';
import {
  CONNECTION_KINDS,
  CONNECTION_MEMBERS,
  connectionMemberProblems,
  defaultSettings,
  mergePatch,
  SETTINGS_MEMBERS,
} from '../src/domain/connection-members.js';
import {
  ADMIN_CONNECTION_TRANSITIONS,
  assertAdminConnectionTransition,
  connectionStatusAfterRun,
} from '../src/domain/connection-status.js';
import { invalidGraphQLInput, invalidInput } from '../src/domain/problems.js';
import { RETRY_BACKOFF, retryDelaySeconds, shouldRetry, SYNC_TRANSITIONS, syncTransitionConflict } from '../src/domain/sync-lifecycle.js';
import { parseSyncReport, SYNC_SUMMARY_KEYS } from '../src/domain/sync-reports.js';
import { ApiError } from '../src/errors.js';
import { ConnectionStatus, SyncStatus } from '../src/generated/prisma/enums.js';

const CONNECTION_STATUSES = Object.values(ConnectionStatus);
const SYNC_STATUSES = Object.values(SyncStatus);

function conflictMessage(run: () => void): string | null {
  try {
    run();
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).extensions.code).toBe('CONFLICT');
    return (error as ApiError).message;
  }
}

describe('metadata and settings members per kind', () => {
  it('accepts the defaults of every kind, and each kind takes the common members plus its own', () => {
    for (const kind of CONNECTION_KINDS) {
      const settings = defaultSettings(kind);
      expect(Object.keys(settings).sort()).toEqual([...CONNECTION_MEMBERS[kind].settings].sort());
      expect(connectionMemberProblems(kind, { metadata: {}, settings })).toEqual([]);
      expect(CONNECTION_MEMBERS[kind].metadata).toEqual(expect.arrayContaining(['region', 'version']));
      expect(CONNECTION_MEMBERS[kind].settings).toEqual(
        expect.arrayContaining(['sync_interval', 'webhook_enabled', 'retry_attempts', 'notification_enabled']),
      );
    }
    expect(defaultSettings('messaging')).toEqual({
      sync_interval: '15m',
      webhook_enabled: false,
      retry_attempts: 3,
      notification_enabled: true,
      mention_users: false,
      thread_enabled: true,
    });
  });

  it('lists every problem: unknown members, wrong types, out-of-range values, missing required members', () => {
    const problems = connectionMemberProblems('pms', {
      metadata: { region: 'eu-west-1', location: 'Berlin', currency: 'eur', version: 3 },
      settings: { sync_interval: '5m', retry_attempts: 11, webhook_enabled: 'yes', track_users: true },
    });
    const byField = Object.fromEntries(problems.map((p) => [p.field, p.message]));
    expect(Object.keys(byField).sort()).toEqual(
      [
        'metadata.location',
        'metadata.currency',
        'metadata.version',
        'settings.sync_interval',
        'settings.retry_attempts',
        'settings.webhook_enabled',
        'settings.track_users',
        'settings.notification_enabled',
      ].sort(),
    );
    expect(byField['metadata.location']).toMatch(/unknown member; this kind of connection takes region, version, property_id/);
    expect(byField['settings.track_users']).toMatch(/unknown member/);
    expect(byField['settings.notification_enabled']).toBe('is required');
    expect(byField['settings.retry_attempts']).toMatch(/10/);
    expect(byField['settings.sync_interval']).toMatch(/15m/);
  });

  it('checks retry_attempts as an integer 0–10, booleans as booleans, strings with length limits', () => {
    const settings = (patch: Record<string, unknown>) => ({ ...defaultSettings('lock'), ...patch });
    const problemFields = (patch: Record<string, unknown>, metadata: Record<string, unknown> = {}) =>
      connectionMemberProblems('lock', { metadata, settings: settings(patch) }).map((p) => p.field);
    expect(problemFields({ retry_attempts: 0 })).toEqual([]);
    expect(problemFields({ retry_attempts: 10 })).toEqual([]);
    expect(problemFields({ retry_attempts: -1 })).toEqual(['settings.retry_attempts']);
    expect(problemFields({ retry_attempts: 2.5 })).toEqual(['settings.retry_attempts']);
    expect(problemFields({ retry_attempts: '3' })).toEqual(['settings.retry_attempts']);
    expect(problemFields({ notification_enabled: 1 })).toEqual(['settings.notification_enabled']);
    expect(problemFields({}, { location: 'x'.repeat(200) })).toEqual([]);
    expect(problemFields({}, { location: 'x'.repeat(201) })).toEqual(['metadata.location']);
    expect(problemFields({}, { region: '   ' })).toEqual(['metadata.region']);
    // sync_interval may be absent: the connection is then only run when triggered.
    const { sync_interval: _omitted, ...manual } = defaultSettings('lock');
    expect(connectionMemberProblems('lock', { metadata: {}, settings: manual })).toEqual([]);
    expect(SETTINGS_MEMBERS.sync_interval.required).toBe(false);
  });

  it('refuses a non-object and gives an unknown category the common members only', () => {
    expect(connectionMemberProblems('lock', { metadata: [], settings: 'x' })).toEqual([
      { field: 'metadata', message: 'must be an object' },
      { field: 'settings', message: 'must be an object' },
    ]);
    const problems = connectionMemberProblems(null, {
      metadata: { location: 'x' },
      settings: { ...defaultSettings(null), track_users: true },
    });
    expect(problems.map((p) => p.field)).toEqual(['metadata.location', 'settings.track_users']);
  });

  it('turns problems into one INVALID_QUERY error listing all of them in details', () => {
    const error = invalidInput([
      { field: 'settings.retry_attempts', message: 'too big' },
      { field: 'metadata.x', message: 'unknown member' },
    ]);
    expect(error.extensions).toMatchObject({
      code: 'INVALID_QUERY',
      http: { status: 400 },
      details: [
        { parameter: 'settings.retry_attempts', message: 'too big' },
        { parameter: 'metadata.x', message: 'unknown member' },
      ],
    });
    expect(error.message).toBe('invalid input: settings.retry_attempts: too big; metadata.x: unknown member');
  });

  it('names the same problems by their GraphQL path on GraphQL: the argument, then camelCase members', () => {
    const error = invalidGraphQLInput(
      [
        { field: 'settings.retry_attempts', message: 'too big' },
        { field: 'application_id', message: 'no such application' },
        { field: '(body)', message: 'must be an object' },
      ],
      'input',
    );
    expect(error.extensions.details).toEqual([
      { field: 'input.settings.retryAttempts', message: 'too big' },
      { field: 'input.applicationId', message: 'no such application' },
      { field: 'input', message: 'must be an object' },
    ]);
    expect(error.message).toBe(
      'invalid input: input.settings.retryAttempts: too big; input.applicationId: no such application; input: must be an object',
    );
  });
});

describe('JSON Merge Patch (RFC 7396)', () => {
  // RFC 7396, Appendix A.
  it.each([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('%j patched with %j is %j', (target, patch, expected) => {
    expect(mergePatch(target, patch)).toEqual(expected);
  });

  it('does not mutate its inputs, and keeps a "__proto__" member as a member', () => {
    const target = { a: { b: 1 } };
    mergePatch(target, { a: { b: 2 } });
    expect(target).toEqual({ a: { b: 1 } });
    const merged = mergePatch({}, JSON.parse('{"__proto__": {"polluted": true}}')) as Record<string, unknown>;
    expect(Object.keys(merged)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
  });
});

describe('connection status state machine', () => {
  it('lets an admin make exactly the table’s transitions, and set the current status again', () => {
    for (const from of CONNECTION_STATUSES) {
      for (const to of CONNECTION_STATUSES) {
        const message = conflictMessage(() => assertAdminConnectionTransition('con_x', from, to));
        const allowed = from === to || ADMIN_CONNECTION_TRANSITIONS[from].includes(to);
        expect(message === null, `${from} → ${to}`).toBe(allowed);
        if (message) expect(message).toContain(`is "${from}"`);
      }
    }
    expect(ADMIN_CONNECTION_TRANSITIONS).toEqual({ pending: [], active: ['paused'], paused: ['active'], error: ['active', 'paused'] });
  });

  it('names the current status and what is allowed from it', () => {
    expect(conflictMessage(() => assertAdminConnectionTransition('con_1', 'active', 'error'))).toBe(
      'connection con_1 is "active": it cannot be set to "error"; from "active" an admin can set "paused" ("error" is set by the service, never by a request)',
    );
    expect(conflictMessage(() => assertAdminConnectionTransition('con_1', 'pending', 'active'))).toBe(
      'connection con_1 is "pending": it cannot be set to "active"; from "pending" an admin can set nothing (a new connection becomes "active" with its first successful run)',
    );
    expect(conflictMessage(() => assertAdminConnectionTransition('con_1', 'error', 'pending'))).toMatch(
      /from "error" an admin can set "active" or "paused"/,
    );
  });

  it('follows run outcomes: success makes it active, a final failure error, paused stays paused', () => {
    expect(connectionStatusAfterRun('pending', 'success')).toBe('active');
    expect(connectionStatusAfterRun('error', 'success')).toBe('active');
    expect(connectionStatusAfterRun('active', 'success')).toBe('active');
    expect(connectionStatusAfterRun('pending', 'failed')).toBe('error');
    expect(connectionStatusAfterRun('active', 'failed')).toBe('error');
    expect(connectionStatusAfterRun('error', 'failed')).toBe('error');
    expect(connectionStatusAfterRun('paused', 'success')).toBe('paused');
    expect(connectionStatusAfterRun('paused', 'failed')).toBe('paused');
  });
});

describe('sync run lifecycle', () => {
  it('allows pending → in_progress | failed and in_progress → success | failed, nothing else', () => {
    const allowed = SYNC_STATUSES.flatMap((from) => SYNC_TRANSITIONS[from].map((to) => `${from}→${to}`));
    expect(allowed.sort()).toEqual(['in_progress→failed', 'in_progress→success', 'pending→failed', 'pending→in_progress']);
  });

  it('words a refused transition with the current status and what it allows', () => {
    expect(syncTransitionConflict('syn_1', 'success', 'failed').message).toBe(
      'sync syn_1 is "success": it cannot move to "failed"; from "success" it can move to nothing (it is finished)',
    );
    expect(syncTransitionConflict('syn_1', 'pending', 'success').message).toBe(
      'sync syn_1 is "pending": it cannot move to "success"; from "pending" it can move to "in_progress" or "failed"',
    );
  });

  it('retries while retry_attempts allows, with exponential back-off up to a cap', () => {
    expect(shouldRetry(1, 0)).toBe(false);
    expect(shouldRetry(1, 1)).toBe(true);
    expect(shouldRetry(2, 1)).toBe(false);
    expect(shouldRetry(10, 10)).toBe(true);
    expect(shouldRetry(11, 10)).toBe(false);
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelaySeconds(attempt))).toEqual([30, 60, 120, 240, 480]);
    expect(retryDelaySeconds(20)).toBe(RETRY_BACKOFF.maxSeconds);
    expect(retryDelaySeconds(3, { baseSeconds: 1, factor: 3, maxSeconds: 5 })).toBe(5);
  });
});

describe('run reports', () => {
  it('parses progress, success and failure, filling the checksum and keeping only allowed summary members', () => {
    expect(parseSyncReport({ summary: { processed: 10, estimated_items: 100 } })).toEqual({
      report: { kind: 'progress', summary: { processed: 10, estimated_items: 100 } },
    });
    expect(
      parseSyncReport({
        status: 'success',
        summary: { processed: 5, inserted: 1, updated: 2, deleted: 0 },
        file_url: 'https://files.example.com/x.json',
        diff: { added: ['ext_1'] },
        checksum: { b: 'abc' },
      }),
    ).toEqual({
      report: {
        kind: 'finish',
        outcome: {
          status: 'success',
          summary: { processed: 5, inserted: 1, updated: 2, deleted: 0 },
          fileUrl: 'https://files.example.com/x.json',
          diff: { added: ['ext_1'] },
          checksum: { b: 'abc', f: '', ac: '', ap: '', ls: '', file: '' },
        },
      },
    });
    expect(parseSyncReport({ status: 'failed', error_message: ' Timeout ', summary: { errors: ['Timeout'], processed: 3 } })).toEqual({
      report: { kind: 'finish', outcome: { status: 'failed', errorMessage: 'Timeout', summary: { errors: ['Timeout'], processed: 3 } } },
    });
    expect(parseSyncReport({ status: 'success' })).toEqual({ report: { kind: 'finish', outcome: { status: 'success', summary: {} } } });
  });

  it('lists every problem of a bad report', () => {
    const result = parseSyncReport({
      status: 'success',
      summary: { processed: -1, errors: ['x'], inserted: 'many' },
      file_url: 'ftp://x',
      extra: true,
    });
    expect('problems' in result && result.problems.map((p) => p.field).sort()).toEqual(
      ['extra', 'file_url', 'summary.errors', 'summary.inserted', 'summary.processed'].sort(),
    );
    const failed = parseSyncReport({ status: 'failed', summary: { inserted: 1 } });
    expect('problems' in failed && failed.problems.map((p) => p.field).sort()).toEqual(['error_message', 'summary.inserted']);
    expect(parseSyncReport({ status: 'in_progress' })).toEqual({
      problems: [{ field: 'status', message: 'must be "success" or "failed" (leave it out to report progress)' }],
    });
    const progress = parseSyncReport({ summary: { inserted: 3 } });
    expect('problems' in progress && progress.problems).toEqual([{ field: 'summary.inserted', message: 'unknown member' }]);
    expect('problems' in parseSyncReport(null)).toBe(true);
    expect(SYNC_SUMMARY_KEYS.success).toEqual(['processed', 'inserted', 'updated', 'deleted']);
  });
});

describe('connection bodies', () => {
  it('parses a create body into the data layer input, and lists every problem', () => {
    expect(parseCreateConnection({ application_id: 'app_1', name: ' Stripe EU ', settings: { retry_attempts: 2 } })).toEqual({
      input: { applicationId: 'app_1', name: 'Stripe EU', settings: { retry_attempts: 2 } },
    });
    const bad = parseCreateConnection({ name: '', via: 'pigeon', metadata: [], tenant_id: 'ten_x' });
    expect('problems' in bad && bad.problems.map((p) => p.field).sort()).toEqual([
      'application_id',
      'metadata',
      'name',
      'tenant_id',
      'via',
    ]);
  });

  it('parses a merge patch: null removes, status must be a status', () => {
    expect(parseConnectionPatch({ description: null, settings: { sync_interval: null }, status: 'paused' })).toEqual({
      patch: { description: null, settings: { sync_interval: null }, status: 'paused' },
    });
    expect(parseConnectionPatch({})).toEqual({ patch: {} });
    const bad = parseConnectionPatch({ name: null, status: 'sleeping', via: 'oauth' });
    expect('problems' in bad && bad.problems.map((p) => p.field).sort()).toEqual(['name', 'status', 'via']);
  });
});
