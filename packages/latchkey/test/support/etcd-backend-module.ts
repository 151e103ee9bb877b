import { etcdBackend } from '../../src/backends/etcd/index.js'

/** The etcd URL of the tests (`scripts/servers/etcd.sh start`). */
export const ETCD_URL = process.env.LATCHKEY_ETCD_URL ?? 'http://127.0.0.1:2379'

/** Used by the conformance suite's child processes: every process talks to the same etcd. */
export function createBackend() {
  return etcdBackend({ hosts: ETCD_URL })
}

/** The same in Go's `concurrency.Mutex` layout (`etcdctl lock`), for the etcd-layout conformance run's children. */
export function createEtcdLayoutBackend() {
  return etcdBackend({ hosts: ETCD_URL, layout: 'etcd' })
}
