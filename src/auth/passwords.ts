// Passwords are hashed with argon2id at OWASP's first recommended setting (19 MiB, 2 passes, 1 lane): memory-hard,
// so a stolen table costs an attacker as much memory per guess. The PHC string keeps the parameters beside the
// hash, so a later change of setting still verifies the passwords hashed before it. Each hash and verification
// takes its turn (HashTurn): in the gateway, a lease of the governor's `password-hash` resource for the client's
// address, so a flood from one address neither runs more than the process's few at once nor delays another
// address by more than a turn.

import type { Governor } from '../governor/governor.js';

const ARGON2ID = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MIN_PASSWORD_LENGTH = 12;
/** argon2 takes any length; a bound keeps one request from hashing megabytes. */
export const MAX_PASSWORD_LENGTH = 256;

let argon2: Promise<typeof import('@node-rs/argon2')> | undefined;
/** The argon2 binding, loaded at the first password: a server whose members never sign in does not load it. */
function loadArgon2(): Promise<typeof import('@node-rs/argon2')> {
  argon2 ??= import('@node-rs/argon2');
  return argon2;
}

/** Runs one hash or verification when its turn comes. */
export type HashTurn = <T>(work: () => Promise<T>) => Promise<T>;

/** In a process that serves one person (the CLI): at once. */
export const AT_ONCE: HashTurn = (work) => work();

/** In the gateway: in turn with every other hash of the process, keyed by the client's address. */
export function hashTurnOf(governor: Governor, address: string, client?: AbortSignal): HashTurn {
  return (work) => governor.inTurn('password-hash', { tenant: address }, work, client);
}

export async function hashPassword(password: string, turn: HashTurn = AT_ONCE): Promise<string> {
  const { hash } = await loadArgon2();
  return turn(() => hash(password, ARGON2ID));
}

/**
 * Whether `password` matches `stored`. Without a stored hash (no such account, or no password set yet) a dummy
 * hash is verified all the same, so the answer takes as long as for a wrong password.
 */
export async function passwordMatches(stored: string | null, password: string, turn: HashTurn = AT_ONCE): Promise<boolean> {
  const target = stored ?? (await dummyHash());
  const { verify } = await loadArgon2();
  const matches = await turn(() => verify(target, password.slice(0, MAX_PASSWORD_LENGTH)).catch(() => false));
  return stored !== null && matches;
}

let dummy: Promise<string> | undefined;
function dummyHash(): Promise<string> {
  dummy ??= hashPassword('a password no account has');
  return dummy;
}

let common: Promise<ReadonlySet<string>> | undefined;
/** The 49,000 most common passwords that @zxcvbn-ts/language-common ships, loaded at the first check. */
function commonPasswords(): Promise<ReadonlySet<string>> {
  common ??= import('@zxcvbn-ts/language-common').then((module) => {
    // Bundled (dist/), the package's CommonJS build is what loads: its exports are then under `default`.
    const { dictionary } = 'dictionary' in module && module.dictionary ? module : (module as unknown as { default: typeof module }).default;
    return new Set(dictionary['passwords-common'] as string[]);
  });
  return common;
}

/** Why a chosen password is refused, or null when it is acceptable. */
export async function passwordWeakness(password: unknown): Promise<string | null> {
  if (typeof password !== 'string') return 'password must be a string';
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return `the password is too short: at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `the password is too long: at most ${MAX_PASSWORD_LENGTH} characters`;
  if ((await commonPasswords()).has(password.toLowerCase())) return 'the password is on a list of commonly used passwords: choose another';
  return null;
}
