/**
 * latchkey's Redis backend beside its Node peers (redlock 4.2 / 5.0-beta, redis-semaphore 5.8, raw
 * SET NX PX + DEL, the proto-blpop floor) on a private redis-server: the peers part of bench/RESULTS.md on its own.
 *
 *   npx tsx bench/redis-locks.ts      (BENCH_QUICK=1 for one short run; `npm run bench` for the whole report)
 *   BENCH_ONLY=raw,redis,redis-semaphore BENCH_WAITERS=- npx tsx bench/redis-locks.ts   (the uncontended cells only)
 *
 * BENCH_BASELINE_DIST=<absolute path of another build's dist> adds that build's Redis backend (`redis-baseline`).
 */
import { runSubset } from './lib/subset.js'

await runSubset(
  'Redis locks: latchkey and its peers',
  ['raw', 'redis', 'redis-baseline', 'redis-poll', 'redlock4', 'redlock5', 'redis-semaphore', 'proto-blpop'],
  'raw',
)
