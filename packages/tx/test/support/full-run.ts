/**
 * Whether this is the full run (`npm run test:full`, `LATCHKEY_FULL=1`): the default suite keeps a smoke subset
 * of each fault matrix and seeded suite, so that `./scripts/test.sh` stays within its time budget on a 2-core
 * machine; the full run adds every row and every seed. Each smoke still has every distinct fault kind once.
 */
export const FULL_RUN = process.env.LATCHKEY_FULL === '1'

/** The rows to run: all of them in the full run, else those `inSmoke` keeps. */
export function smokeOrFull<T>(rows: readonly T[], inSmoke: (row: T) => boolean): T[] {
  return FULL_RUN ? [...rows] : rows.filter(inSmoke)
}
