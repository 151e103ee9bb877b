/**
 * latchkey's ZooKeeper backend (standalone and 3-node ensemble) beside its Redis backend, with the raw znode
 * create+delete floor.
 *
 *   bash scripts/servers/zookeeper.sh start && bash scripts/servers/zookeeper.sh start-ensemble
 *   npx tsx bench/zookeeper-locks.ts   (BENCH_QUICK=1 for a short run; a member not serving is skipped)
 */
import { runSubset } from './lib/subset.js'

await runSubset('ZooKeeper beside Redis', ['zk', 'zk3', 'znode', 'redis'], 'redis')
