/**
 * Removes what a run left on the shared servers, by lock-name prefix: fencing counters and rows stay after a
 * release by design, and a waiter cut off by the end of a window may leave its place in line to expire.
 * The private redis-server of the run is simply stopped.
 */
import { Etcd3 } from 'etcd3'
import { KeyLayout } from '../../packages/latchkey/src/backends/etcd/keys.js'
import { deleteRedlockKeys } from '../../packages/latchkey/test/support/redlock-backend-module.js'
import { cleanupMysql, cleanupPostgres } from '../../packages/latchkey/test/support/sql-backends.js'
import { cleanupNamespace } from '../../packages/latchkey/test/support/zookeeper-env.js'
import type { Servers } from './catalog.js'

/** Each server's cleanup by lock-name prefix. */
export function cleaners(
  s: Servers,
): Record<'redlock' | 'zk' | 'zk3' | 'etcd' | 'mysql' | 'postgres', (prefix: string) => Promise<void>> {
  return {
    redlock: (prefix) => deleteRedlockKeys(prefix, s.redlock),
    zk: (prefix) => cleanupNamespace(s.zk, prefix),
    zk3: (prefix) => cleanupNamespace(s.zkEnsemble, prefix),
    etcd: async (prefix) => {
      const admin = new Etcd3({ hosts: s.etcd })
      try {
        const range = new KeyLayout('latchkey').namesRange(prefix)
        await admin.kv.deleteRange({ key: range.start, range_end: range.end })
        // The raw etcd floor's keys (`<namespace>/raw/...`).
        await admin.delete().prefix(`${prefix}/`)
      } finally {
        admin.close()
      }
    },
    mysql: cleanupMysql,
    postgres: cleanupPostgres,
  }
}

/** Runs every cleanup for `prefix`; returns the ones that failed. */
export async function cleanupAll(s: Servers, prefix: string): Promise<string[]> {
  const failed: string[] = []
  for (const [name, clean] of Object.entries(cleaners(s))) {
    await clean(prefix).catch((error: unknown) => failed.push(`${name}: ${String(error)}`))
  }
  return failed
}
