// Passwords are hashed with argon2id at OWASP's first recommended setting (19 MiB, 2 passes, 1 lane): memory-hard,
// so a stolen table costs an attacker as much memory per guess. The PHC string keeps the parameters beside the
// hash, so a later change of setting still verifies the passwords hashed before it. Each hash and verification
// takes its turn (HashTurn): in the gateway, a lease of the governor's `password-hash` resource for the client's
// address, so a flood from one address neither runs more than the process's few at once nor delays another
// address by more than a turn.

import { timingSafeEqual } from 'node:crypto';
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

/**
 * The PHC string of `password`. With `saltSource`, the hash of one of the email's other memberships, it takes that
 * hash's salt when that hash has today's parameters: the memberships of one email then share a salt, so one hash
 * of a password checks it against all of them (passwordMatchesOf).
 */
export async function hashPassword(password: string, turn: HashTurn = AT_ONCE, saltSource?: string | null): Promise<string> {
  const { hash } = await loadArgon2();
  const source = saltSource ? phcParts(saltSource) : null;
  const salt = source?.prefix.startsWith(CURRENT_PARAMETERS) ? new Uint8Array(source.salt) : undefined;
  return turn(() => hash(password, salt ? { ...ARGON2ID, salt } : ARGON2ID));
}

/** What every hash made with today's parameters starts with. */
const CURRENT_PARAMETERS = `$argon2id$v=19$m=${ARGON2ID.memoryCost},t=${ARGON2ID.timeCost},p=${ARGON2ID.parallelism}$`;

/** A PHC string's parts: all before the hash (algorithm, parameters, salt), the salt's bytes and the hash's. */
function phcParts(phc: string): { prefix: string; salt: Buffer; hash: Buffer } | null {
  const hashStart = phc.lastIndexOf('$');
  const saltStart = phc.lastIndexOf('$', hashStart - 1);
  if (saltStart <= 0) return null;
  const salt = Buffer.from(phc.slice(saltStart + 1, hashStart), 'base64');
  const hash = Buffer.from(phc.slice(hashStart + 1), 'base64');
  return salt.length > 0 && hash.length > 0 ? { prefix: phc.slice(0, hashStart), salt, hash } : null;
}

/**
 * Which of `stored` (the hashes of one email's memberships, null where no password is set) `password` matches,
 * after one hash only: `password` is hashed with the parameters and salt of the first stored hash, then compared
 * with every stored hash made with the same ones. A stored hash with another salt is not checked (naming its
 * organization leaves it alone in `stored`). Without a usable stored hash a dummy hash is verified, so the answer
 * takes as long as for a wrong password.
 */
export async function passwordMatchesOf(
  stored: readonly (string | null)[],
  password: string,
  turn: HashTurn = AT_ONCE,
): Promise<boolean[]> {
  const { hashRaw, parseOptions } = await loadArgon2();
  const parts = stored.map((phc) => (phc === null ? null : phcParts(phc)));
  const first = parts.findIndex((p) => p !== null);
  const options = first < 0 ? null : optionsOf(parseOptions, stored[first]!);
  const reference = options ? parts[first]! : null;
  if (!options || !reference) {
    await verifyDummy(password, turn);
    return stored.map(() => false);
  }
  const { algorithm, version, memoryCost, timeCost, parallelism, outputLen } = options;
  const raw = await turn(() =>
    hashRaw(password.slice(0, MAX_PASSWORD_LENGTH), {
      algorithm,
      version,
      memoryCost,
      timeCost,
      parallelism,
      outputLen,
      salt: new Uint8Array(reference.salt),
    }),
  );
  return parts.map((p) => p !== null && p.prefix === reference.prefix && p.hash.length === raw.length && timingSafeEqual(p.hash, raw));
}

/** The parameters of a PHC string, or null for a string that is no argon2 hash. */
function optionsOf(parse: typeof import('@node-rs/argon2').parseOptions, phc: string) {
  try {
    return parse(phc);
  } catch {
    return null;
  }
}

/** Verifies `password` against a dummy hash: for an email with no password, the work of a wrong password. */
async function verifyDummy(password: string, turn: HashTurn): Promise<void> {
  const target = await dummyHash();
  const { verify } = await loadArgon2();
  await turn(() => verify(target, password.slice(0, MAX_PASSWORD_LENGTH)).catch(() => false));
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
