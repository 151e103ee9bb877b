import { zookeeperBackend } from '../../src/backends/zookeeper/index.js'
import { zkUrl } from './zookeeper-env.js'

/** Used by the conformance suite's child processes: every process opens its own session to the same server. */
export function createBackend() {
  return zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000 })
}

/** The same, with Apache Curator's znode layout (`layout: 'curator'`). */
export function createCuratorBackend() {
  return zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000, layout: 'curator' })
}
