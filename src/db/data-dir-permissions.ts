import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

// A PGlite data directory holds the whole database (tokens' hashes, webhook secrets' ciphertext and their key
// file, the event log): only the user the server runs as may read it. The directory is 0700 and everything in
// it 0600 (directories 0700). PGlite's file system layer creates its files world-readable (0666, whatever the
// umask), so the tree is tightened when the database opens, every SWEEP_MS while it is open, and when it
// closes; in between, the directory's own 0700 already keeps every other user out of what lies below it.

const PRIVATE_DIRECTORY = 0o700;
const PRIVATE_FILE = 0o600;

/** How often an open data directory is tightened again (files PGlite created meanwhile). */
export const DATA_DIRECTORY_SWEEP_MS = 60_000;

/** Creates the data directory if needed, private to this user. */
export function createPrivateDirectory(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIRECTORY });
  chmodSync(dataDir, PRIVATE_DIRECTORY);
}

/** Makes every directory under `dir` (itself included) 0700 and every file 0600; sockets and links stay as they are. */
export function restrictDirectoryTree(dir: string): void {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  if (!stat?.isDirectory()) return;
  if ((stat.mode & 0o777) !== PRIVATE_DIRECTORY) chmodSync(dir, PRIVATE_DIRECTORY);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) restrictDirectoryTree(path);
    else if (entry.isFile()) {
      // A file can vanish between the listing and the chmod (PostgreSQL removes old WAL segments).
      const mode = lstatSync(path, { throwIfNoEntry: false })?.mode;
      if (mode !== undefined && (mode & 0o777) !== PRIVATE_FILE) chmodFile(path);
    }
  }
}

function chmodFile(path: string): void {
  try {
    chmodSync(path, PRIVATE_FILE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Tightens the tree now and every DATA_DIRECTORY_SWEEP_MS; returns the function that stops (and tightens once more). */
export function keepDirectoryPrivate(dataDir: string): () => void {
  restrictDirectoryTree(dataDir);
  const timer = setInterval(() => {
    try {
      restrictDirectoryTree(dataDir);
    } catch {
      // A sweep that failed (the directory being removed, say) is tried again at the next one.
    }
  }, DATA_DIRECTORY_SWEEP_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    try {
      restrictDirectoryTree(dataDir);
    } catch {
      // Closing must not fail on it: the next open tightens the tree again.
    }
  };
}
