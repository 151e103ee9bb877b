import { fileURLToPath } from 'node:url'
import { zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { describeBackendConformance } from '../src/testing/index.js'
import { cleanupNamespace, zkUrl } from './support/zookeeper-env.js'

// Needs a standalone server: bash scripts/servers/zookeeper.sh start (or LATCHKEY_ZK_URL).
describeBackendConformance('zookeeper', () => zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000 }), {
  processBackend: { module: fileURLToPath(new URL('./support/zookeeper-backend-module.ts', import.meta.url)) },
  cleanup: (namespace) => cleanupNamespace(zkUrl(), namespace),
})
