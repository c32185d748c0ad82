import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/env.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    expect(parseConfig({})).toMatchObject({
      PORT: 4000,
      HOST: '127.0.0.1',
      DATA_DIR: './.data',
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_MINUTE: 600,
      JWT_MAX_LIFETIME_SECONDS: 86_400,
    });
    expect(parseConfig({}).DATABASE_URL).toBeUndefined();
  });

  it('runs the scheduler by default, every 5 s, and refuses bad scheduler settings', () => {
    expect(parseConfig({})).toMatchObject({ SCHEDULER: 'on', SCHEDULER_TICK_MS: 5000 });
    expect(parseConfig({ SCHEDULER: 'off', SCHEDULER_TICK_MS: '250' })).toMatchObject({ SCHEDULER: 'off', SCHEDULER_TICK_MS: 250 });
    expect(() => parseConfig({ SCHEDULER: 'maybe', SCHEDULER_TICK_MS: '10' })).toThrow(/SCHEDULER:[\s\S]*SCHEDULER_TICK_MS:/);
  });

  it('takes DATABASE_READ_URL only beside a PostgreSQL DATABASE_URL, with a lag bound of 1 s by default', () => {
    const primary = 'postgres://gw@db:5000/gw';
    expect(parseConfig({ DATABASE_URL: primary, DATABASE_READ_URL: 'postgres://gw@db:5001/gw' })).toMatchObject({
      DATABASE_READ_URL: 'postgres://gw@db:5001/gw',
      DATABASE_READ_MAX_LAG_MS: 1000,
    });
    expect(parseConfig({ DATABASE_URL: primary, DATABASE_READ_URL: '' }).DATABASE_READ_URL).toBeUndefined();
    expect(() => parseConfig({ DATABASE_READ_URL: 'postgres://gw@db:5001/gw' })).toThrow(/DATABASE_READ_URL: needs DATABASE_URL/);
    expect(() => parseConfig({ DATABASE_URL: primary, DATABASE_READ_URL: 'mysql://x', DATABASE_READ_MAX_LAG_MS: '-1' })).toThrow(
      /DATABASE_READ_URL: must be a postgres:\/\/[\s\S]*DATABASE_READ_MAX_LAG_MS/,
    );
  });

  it('lets webhooks target this machine by default only in the demo that listens on loopback', () => {
    const pg = 'postgres://gw@db:5000/gw';
    expect(parseConfig({}).WEBHOOK_ALLOW_PRIVATE).toBe('1');
    expect(parseConfig({ HOST: 'localhost' }).WEBHOOK_ALLOW_PRIVATE).toBe('1');
    expect(parseConfig({ HOST: '::1' }).WEBHOOK_ALLOW_PRIVATE).toBe('1');
    expect(parseConfig({ HOST: '0.0.0.0' }).WEBHOOK_ALLOW_PRIVATE).toBe('0');
    expect(parseConfig({ HOST: '127.0.0.1.example.com' }).WEBHOOK_ALLOW_PRIVATE).toBe('0');
    expect(parseConfig({ SEED: 'none' }).WEBHOOK_ALLOW_PRIVATE).toBe('0');
    expect(parseConfig({ DATABASE_URL: pg }).WEBHOOK_ALLOW_PRIVATE).toBe('0');
    expect(parseConfig({ WEBHOOK_ALLOW_PRIVATE: '0' }).WEBHOOK_ALLOW_PRIVATE).toBe('0');
    expect(parseConfig({ DATABASE_URL: pg, HOST: '0.0.0.0', WEBHOOK_ALLOW_PRIVATE: '1' }).WEBHOOK_ALLOW_PRIVATE).toBe('1');
  });

  it('treats empty values as unset', () => {
    expect(parseConfig({ DATABASE_URL: '', JWT_SECRET: '  ' }).DATABASE_URL).toBeUndefined();
  });

  it('lists every problem at once', () => {
    let error: unknown;
    try {
      parseConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', SEED: 'maybe', JWT_SECRET: 'short', LOG_LEVEL: 'loud' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of ['PORT', 'DATABASE_URL', 'SEED', 'JWT_SECRET', 'LOG_LEVEL']) expect(problems).toContain(name);
    expect((error as ConfigError).message.split('\n').length).toBeGreaterThanOrEqual(6);
  });

  it('reads JWT_MAX_LIFETIME_SECONDS as whole seconds, from a minute to 366 days', () => {
    expect(parseConfig({ JWT_MAX_LIFETIME_SECONDS: '3600' }).JWT_MAX_LIFETIME_SECONDS).toBe(3600);
    for (const bad of ['0', '59', '1.5', 'a day', String(366 * 86_400 + 1)]) {
      expect(() => parseConfig({ JWT_MAX_LIFETIME_SECONDS: bad }), bad).toThrow(/JWT_MAX_LIFETIME_SECONDS/);
    }
  });

  it('refuses two JWT key sources', () => {
    expect(() =>
      parseConfig({
        JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----',
        JWT_JWKS_URL: 'https://issuer.example/jwks.json',
      }),
    ).toThrow(/not both/);
  });
});
