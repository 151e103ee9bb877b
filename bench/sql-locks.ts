/**
 * Every strategy of the MariaDB/MySQL and PostgreSQL backends beside the Redis backend.
 *
 *   npx tsx bench/sql-locks.ts   (BENCH_QUICK=1 for a short run; LATCHKEY_MYSQL_URL, LATCHKEY_POSTGRES_URL)
 */
import { runSubset } from './lib/subset.js'

await runSubset(
  'SQL backends beside Redis',
  ['mariadb-table', 'mariadb-get_lock', 'mariadb-for_update', 'pg-table', 'pg-advisory', 'redis'],
  'redis',
)
