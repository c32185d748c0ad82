import { pino, type Logger } from 'pino';

/** JSON lines on stdout. Authorization headers and token values are never logged (redacted if they slip in). */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    // Passwords and session cookies too: a member's sign-in is as secret as a token.
    redact: {
      paths: [
        'authorization',
        '*.authorization',
        'token',
        '*.token',
        'headers.authorization',
        'password',
        '*.password',
        'cookie',
        '*.cookie',
        'headers.cookie',
      ],
      censor: '[redacted]',
    },
  });
}

export type { Logger };
