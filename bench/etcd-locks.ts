/**
 * latchkey's etcd backend beside the raw etcd floors (put-if-absent txn + delete on one lease: what etcd itself
 * costs per uncontended pair, sent by etcd3 and by latchkey's own transport) and beside ZooKeeper (the other
 * consensus store, the contended reference).
 *
 *   bash scripts/servers/etcd.sh start && npx tsx bench/etcd-locks.ts   (BENCH_QUICK=1 for a short run)
 */
import { runSubset } from './lib/subset.js'

await runSubset(
  'etcd beside its raw txn floors and ZooKeeper',
  ['etcd', 'etcd-txn', 'etcd-txn-wire', 'zk'],
  'etcd-txn',
  'zk',
)
