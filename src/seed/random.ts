import { createHash } from 'node:crypto';

/**
 * A seeded pseudo-random source. Demo and benchmark data must be reproducible (same seed, same rows, same ids),
 * which `Math.random` and `crypto.randomBytes` cannot give.
 */
export interface Rng {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max], both ends included. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  /** Picks by relative weight: `[['success', 9], ['failed', 1]]`. */
  weighted<T>(entries: readonly (readonly [T, number])[]): T;
  chance(probability: number): boolean;
  bytes(count: number): Uint8Array;
  /** `length` lowercase hex characters. */
  hex(length: number): string;
  /**
   * An independent stream derived from this one's seed and `label`, not from how much of this stream was
   * consumed: adding a row to one connection must not reshuffle every connection after it.
   */
  fork(label: string): Rng;
}

/** sfc32: tiny, fast, passes PractRand far beyond what seed data needs, and has a 128-bit state. */
function sfc32(state: [number, number, number, number]): () => number {
  let [a, b, c, d] = state;
  return () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
}

export function createRng(seed: number | string): Rng {
  const material = String(seed);
  // Hashing the seed spreads nearby seeds (1, 2, 3) over unrelated states and fills all 128 bits.
  const digest = createHash('sha256').update(material).digest();
  // Explicit little-endian reads: the same seed must give the same rows on every machine.
  const next32 = sfc32([digest.readInt32LE(0), digest.readInt32LE(4), digest.readInt32LE(8), digest.readInt32LE(12)]);
  const next = () => next32() / 4294967296;

  const rng: Rng = {
    next,
    int(min, max) {
      if (max < min) throw new RangeError(`int(${min}, ${max}): max is below min`);
      return min + Math.floor(next() * (max - min + 1));
    },
    pick(items) {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[Math.floor(next() * items.length)]!;
    },
    weighted(entries) {
      const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
      let point = next() * total;
      for (const [value, weight] of entries) {
        point -= weight;
        if (point < 0) return value;
      }
      const last = entries[entries.length - 1];
      if (!last) throw new RangeError('weighted pick from an empty list');
      return last[0];
    },
    chance(probability) {
      return next() < probability;
    },
    bytes(count) {
      const out = new Uint8Array(count);
      for (let i = 0; i < count; i += 4) {
        const word = next32();
        for (let j = 0; j < 4 && i + j < count; j++) out[i + j] = (word >>> (j * 8)) & 0xff;
      }
      return out;
    },
    hex(length) {
      return Buffer.from(rng.bytes(Math.ceil(length / 2)))
        .toString('hex')
        .slice(0, length);
    },
    fork(label) {
      return createRng(`${material}/${label}`);
    },
  };
  return rng;
}
