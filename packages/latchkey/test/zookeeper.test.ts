import { fileURLToPath } from 'node:url'
import { zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { describeBackendConformance } from '../src/testing/index.js'
import { cleanupNamespace, zkUrl } from './support/zookeeper-env.js'

// Needs a standalone server: bash scripts/servers/zookeeper.sh start (or LATCHKEY_ZK_URL).
describeBackendConformance('zookeeper', () => zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000 }), {
  processBackend: { module: fileURLToPath(new URL('./support/zookeeper-backend-module.ts', import.meta.url)) },
  cleanup: (namespace) => cleanupNamespace(zkUrl(), namespace),
})

describeBackendConformance(
  'zookeeper (curator layout)',
  () => zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000, layout: 'curator' }),
  {
    processBackend: {
      module: fileURLToPath(new URL('./support/zookeeper-backend-module.ts', import.meta.url)),
      export: 'createCuratorBackend',
    },
    cleanup: (namespace) => cleanupNamespace(zkUrl(), namespace),
    // Curator's semaphore hands out leases one acquirer at a time (its internal mutex is held from the lease node's
    // create to the grant): two round trips and a watch event per handoff, about 50 ms under a load average of 30 on
    // two cores, so the suite's 10 ms holds are scaled up for three holders to overlap.
    timeScale: 4,
  },
)
