/**
 * latchkey's RedLock backend over the five nodes of scripts/servers/redlock.sh, beside its single-node Redis
 * backend.
 *
 *   bash scripts/servers/redlock.sh start && npx tsx bench/redlock-bench.ts   (BENCH_QUICK=1 for a short run)
 */
import { runSubset } from './lib/subset.js'

await runSubset(
  'RedLock (5 nodes) beside redlock 5.0-beta (one node, and the same 5 nodes) and single-node Redis',
  ['redlock', 'redlock-baseline', 'redlock5', 'redlock5-5', 'redis'],
  'redis',
)
