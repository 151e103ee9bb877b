/**
 * latchkey's etcd backend beside its Redis backend, with the raw etcd floor (put-if-absent txn + delete on one
 * lease).
 *
 *   bash scripts/servers/etcd.sh start && npx tsx bench/etcd-locks.ts   (BENCH_QUICK=1 for a short run)
 */
import { runSubset } from './lib/subset.js'

await runSubset('etcd beside Redis', ['etcd', 'etcd-txn', 'redis'], 'redis')
