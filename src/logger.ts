import { pino, type Logger } from 'pino';

/** JSON lines on stdout. Authorization headers and token values are never logged (redacted if they slip in). */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    redact: { paths: ['authorization', '*.authorization', 'token', '*.token', 'headers.authorization'], censor: '[redacted]' },
  });
}

export type { Logger };
