import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'
/**
 * Preloaded after libfaketime so that malloc resolves to glibc's: redis-server links the system jemalloc, whose
 * initialisation reads the clock before libfaketime is set up, and libfaketime 0.9.10 then gives up ("Unexpected
 * recursive calls to clock_gettime()") and the server never starts. With glibc's malloc first it starts and runs.
 */
const LIBC = '/lib/x86_64-linux-gnu/libc.so.6'

/**
 * The wall clock of the processes started with `env()`, moved by libfaketime (Debian `faketime`): a file holds the
 * offset from the real time (`+4`, `-3600`) and optionally a rate (`+0 x2`), re-read on every clock call
 * (`FAKETIME_NO_CACHE`, unless `cacheS`), so a jump takes effect at once. The monotonic clock is left real unless `fakeMonotonic`:
 * a wall-clock step (NTP, an operator) does not move CLOCK_MONOTONIC, and the JVM hangs with a faked one.
 */
export class FakeClock {
  private offsetS = 0

  constructor(
    readonly file: string,
    private readonly rate: number | undefined = undefined,
    private readonly fakeMonotonic = false,
    /**
     * Re-read the file at most this often (seconds) instead of on every clock call. Re-reading on every call makes
     * a Node client start about 3x slower (module loading reads the clock constantly: etcd3 took 2.3 s to import
     * instead of 0.7 s), which ate most of a 20 s run; cached for 1 s, a step lands within a second.
     */
    private readonly cacheS: number | undefined = undefined,
  ) {
    mkdirSync(dirname(file), { recursive: true })
    this.write()
  }

  /** Whether libfaketime is installed (lab/setup.sh installs it). */
  static available(): boolean {
    return existsSync(LIBFAKETIME)
  }

  /** The environment that puts a process on this clock. */
  env(): Record<string, string> {
    if (!FakeClock.available()) throw new Error(`lab: ${LIBFAKETIME} is missing; run bash lab/setup.sh`)
    return {
      LD_PRELOAD: `${LIBFAKETIME} ${LIBC}`,
      FAKETIME_TIMESTAMP_FILE: this.file,
      ...(this.cacheS === undefined ? { FAKETIME_NO_CACHE: '1' } : { FAKETIME_CACHE_DURATION: String(this.cacheS) }),
      ...(this.fakeMonotonic ? {} : { FAKETIME_DONT_FAKE_MONOTONIC: '1' }),
    }
  }

  /** Steps the clock by `ms` (rounded to whole seconds: libfaketime's relative offsets are in seconds). */
  jump(ms: number): void {
    this.offsetS += Math.round(ms / 1000)
    this.write()
  }

  /** How far the clock is from the real time now (seconds). */
  get offsetSeconds(): number {
    return this.offsetS
  }

  private write(): void {
    const sign = this.offsetS < 0 ? '-' : '+'
    writeFileSync(this.file, `${sign}${Math.abs(this.offsetS)}${this.rate === undefined ? '' : ` x${this.rate}`}\n`)
  }
}
