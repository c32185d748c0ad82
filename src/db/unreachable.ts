/**
 * Socket errors that mean the database server cannot be reached: refused, unknown host, unreachable, timed out,
 * or the connection reset. The error masking (503 UNAVAILABLE) and the CLI's "cannot connect" both start from it.
 */
export const UNREACHABLE_CODES: readonly string[] = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH'];
