/**
 * latchkey's etcd backend beside the raw etcd floors (put-if-absent txn + delete on one lease: what etcd itself
 * costs per uncontended pair, sent by etcd3 and by latchkey's own transport) and beside ZooKeeper (the other
 * consensus store, the contended reference).
 *
 *   bash scripts/servers/etcd.sh start && npx tsx bench/etcd-locks.ts   (BENCH_QUICK=1 for a short run)
 *
 * BENCH_BASELINE_DIST=<absolute path of another build's packages/latchkey/dist> adds that build's etcd backend as
 * `etcd-baseline`, to compare a change with what it replaces in the same run.
 */
import { runSubset } from './lib/subset.js'

await runSubset(
  'etcd beside its raw txn floors and ZooKeeper',
  ['etcd', 'etcd-baseline', 'etcd-floor', 'etcd-go-floor', 'etcd-txn', 'etcd-txn-wire', 'zk'],
  'etcd-txn',
  'zk',
)
