import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * JSON lines on stdout. Authorization headers and token values are never logged (redacted if they slip in).
 *
 * Written asynchronously: a line waits while the one before is being written, and the lines that waited go out in
 * one write, rather than one blocking write a line (a system call and a wake-up of the reader for each request).
 * Nothing is held back otherwise, and what waits is written synchronously when the process exits.
 */
export function createLogger(level: string): Logger {
  return pino(
    {
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
    },
    pino.destination({ dest: 1, sync: false }),
  );
}

const fixedFieldLoggers = new WeakMap<Logger, Logger>();

/**
 * The logger's destination and bindings without its redaction, for lines whose fields are fixed and can hold no
 * secret (the request line): redaction walks every line for the paths above, which costs more than the line.
 * Its level is the lowest: the caller asks `logger` whether a line is wanted.
 */
export function fixedFieldLogger(logger: Logger): Logger {
  let plain = fixedFieldLoggers.get(logger);
  if (plain === undefined) {
    const own = logger as unknown as Record<symbol, unknown>;
    const stream = own[pino.symbols.streamSym] as DestinationStream | undefined;
    if (stream) {
      plain = pino({ level: 'trace', base: undefined }, stream);
      // The same leading fields (base and bindings, pre-rendered by pino), so its lines read as the logger's own.
      (plain as unknown as Record<symbol, unknown>)[pino.symbols.chindingsSym] = own[pino.symbols.chindingsSym];
    } else {
      plain = logger;
    }
    fixedFieldLoggers.set(logger, plain);
  }
  return plain;
}

export type { Logger };
