import { describe, expect, it } from 'vitest';
import { countTicks, formatDuration } from '../console/src/format.js';

// The console's durations, for the values where rounding each unit on its own went wrong ("1 min 60 s").

describe("the console's durations", () => {
  it('round once, then split into units, so no unit ever reads 60', () => {
    const cases: [number, string][] = [
      [0, '0 ms'],
      [999, '999 ms'],
      [999.6, '1.0 s'],
      [1_000, '1.0 s'],
      [59_940, '59.9 s'],
      [59_950, '1 min 0 s'],
      [59_960, '1 min 0 s'],
      [60_499, '1 min 0 s'],
      [60_500, '1 min 1 s'],
      [60_000, '1 min 0 s'],
      [119_600, '2 min 0 s'],
      [119_400, '1 min 59 s'],
      [3_599_400, '59 min 59 s'],
      [3_599_500, '1 h 0 min'],
      [3_599_600, '1 h 0 min'],
      [3_629_999, '1 h 0 min'],
      [3_630_000, '1 h 1 min'],
      [7_170_000, '2 h 0 min'],
      [7_530_000, '2 h 6 min'],
    ];
    for (const [ms, shown] of cases) expect(formatDuration(ms), `${ms} ms`).toBe(shown);
    expect(formatDuration(null)).toBe('—');
  });
});

describe("the overview chart's count axis", () => {
  it('goes from 0 to a round top at or above the largest count, in steps of 1, 2 or 5 times a power of ten', () => {
    expect(countTicks(0)).toEqual([0, 1]);
    expect(countTicks(1)).toEqual([0, 1]);
    expect(countTicks(3)).toEqual([0, 1, 2, 3]);
    expect(countTicks(7)).toEqual([0, 2, 4, 6, 8]);
    expect(countTicks(18)).toEqual([0, 5, 10, 15, 20]);
    expect(countTicks(20)).toEqual([0, 5, 10, 15, 20]);
    expect(countTicks(137)).toEqual([0, 50, 100, 150]);
    expect(countTicks(4_000)).toEqual([0, 1_000, 2_000, 3_000, 4_000]);
  });
});
