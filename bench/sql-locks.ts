/**
 * Every strategy of the MariaDB/MySQL and PostgreSQL backends beside the Redis backend.
 *
 *   npx tsx bench/sql-locks.ts   (BENCH_QUICK=1 for a short run; LATCHKEY_MYSQL_URL, LATCHKEY_POSTGRES_URL)
 *   BENCH_ONLY=mariadb-table,mariadb-get_lock BENCH_CONCURRENCY=- npx tsx bench/sql-locks.ts   (the MariaDB
 *   table-vs-get_lock cells at 10, 100 and 1,000 waiters only)
 */
import { runSubset } from './lib/subset.js'

await runSubset(
  'SQL backends beside Redis',
  ['mariadb-table', 'mariadb-get_lock', 'mariadb-for_update', 'pg-table', 'pg-advisory', 'redis'],
  'redis',
)
