/**
 * The server's own limit, by `redis-benchmark` (when installed) against the run's private redis-server:
 * plain SET and the lock-shaped `SET key v NX PX`, at 1 and 50 connections.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const exec = promisify(execFile)

/** One redis-benchmark line: requests/s of one test. */
export interface BenchLine {
  readonly test: string
  readonly clients: number
  readonly opsPerSecond: number
}

/** Tests run: name and arguments after the common ones. */
const TESTS: readonly [string, string[]][] = [
  ['SET', ['-t', 'set']],
  ['SET k v NX PX 10000', ['SET', 'lkbench:__rand_int__', 'v', 'NX', 'PX', '10000']],
]

/** Runs each test at -c 1 and -c 50; undefined when redis-benchmark is not installed. */
export async function redisBenchmark(port: number, requests: number): Promise<BenchLine[] | undefined> {
  const out: BenchLine[] = []
  for (const [test, args] of TESTS) {
    for (const clients of [1, 50]) {
      const n = String(clients === 1 ? Math.ceil(requests / 5) : requests)
      const common = ['-h', '127.0.0.1', '-p', String(port), '-c', String(clients), '-n', n, '-r', '100000', '-q']
      try {
        const { stdout } = await exec('redis-benchmark', [...common, ...args], { timeout: 120_000 })
        // "SET: 22292.00 requests per second, p50=0.047 msec" (the last \r-separated update of the line)
        const m = /([\d.]+) requests per second/.exec(stdout.split('\r').pop() ?? stdout)
        out.push({ test, clients, opsPerSecond: Number(m?.[1] ?? Number.NaN) })
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
        out.push({ test, clients, opsPerSecond: Number.NaN })
      }
    }
  }
  return out
}
