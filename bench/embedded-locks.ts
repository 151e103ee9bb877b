/**
 * The embedded backends (memory, SQLite) on the report's scenarios, SQLite waiters spread over OS processes.
 *
 *   npx tsx bench/embedded-locks.ts   (BENCH_QUICK=1 for one short run; `npm run bench` for the whole report)
 */
import { runSubset } from './lib/subset.js'

await runSubset('Embedded backends: memory and SQLite', ['memory', 'sqlite', 'redis'], 'memory')
