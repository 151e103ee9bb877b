/**
 * The two ZooKeeper targets the ZooKeeper benches run against: the standalone server (`LATCHKEY_ZK_URL`) and the
 * 3-node ensemble on loopback (`LATCHKEY_ZK_ENSEMBLE_PORTS`), as scripts/servers/zookeeper.sh starts them.
 */
export interface ZkTarget {
  readonly id: 'standalone' | '3-node ensemble'
  /** A connect string: host:port, comma-separated for the ensemble. */
  readonly connect: string
}

/** Both targets, from `env` (defaults: 127.0.0.1:2181 and ports 2291-2293). */
export function zkTargets(env: NodeJS.ProcessEnv): ZkTarget[] {
  return [
    { id: 'standalone', connect: env.LATCHKEY_ZK_URL ?? '127.0.0.1:2181' },
    {
      id: '3-node ensemble',
      connect: (env.LATCHKEY_ZK_ENSEMBLE_PORTS ?? '2291,2292,2293')
        .split(',')
        .map((p) => `127.0.0.1:${p.trim()}`)
        .join(','),
    },
  ]
}
