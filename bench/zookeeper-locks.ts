/**
 * latchkey's ZooKeeper backend (standalone and 3-node ensemble) beside Apache Curator 5.4's InterProcessMutex
 * on the same servers (a JVM built against Debian's jars, lib/curator-pool.ts; scripts/servers/java.sh installs
 * them), its Redis backend and the raw znode create+delete floor.
 *
 *   bash scripts/servers/zookeeper.sh start && bash scripts/servers/zookeeper.sh start-ensemble
 *   npx tsx bench/zookeeper-locks.ts   (BENCH_QUICK=1 for a short run; a member not serving is skipped)
 */
import { runSubset } from './lib/subset.js'

await runSubset(
  'ZooKeeper beside Apache Curator and Redis',
  ['zk', 'zk-1p', 'curator', 'zk3', 'zk3-1p', 'curator3', 'znode', 'redis'],
  'redis',
)
