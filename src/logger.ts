import { pino, type DestinationStream, type Logger } from 'pino';

/** What a batched logger holds before writing (bytes of JSON lines), and the longest a line waits. */
const BATCH_BYTES = 4096;
const BATCH_FLUSH_MS = 100;

/**
 * JSON lines on stdout. Authorization headers and token values are never logged (redacted if they slip in).
 * `batched` (the server): lines are gathered up to BATCH_BYTES and written at least every BATCH_FLUSH_MS, off
 * this thread, instead of a write per line; pino writes what is left when the process exits.
 */
export function createLogger(level: string, { batched = false }: { batched?: boolean } = {}): Logger {
  const options = {
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
  };
  return batched
    ? pino(options, pino.destination({ dest: process.stdout.fd, minLength: BATCH_BYTES, periodicFlush: BATCH_FLUSH_MS }))
    : pino(options);
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
