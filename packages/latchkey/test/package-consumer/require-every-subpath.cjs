// CommonJS code using the installed tarball (run by test/package.test.ts in a fresh folder): requires every
// subpath, takes and frees a lock on the memory backend, and prints what it saw as one JSON line.
const factories = {
  latchkey: 'createLocks',
  'latchkey/memory': 'memoryBackend',
  'latchkey/sqlite': 'sqliteBackend',
  'latchkey/redis': 'redlockBackend',
  'latchkey/zookeeper': 'zookeeperBackend',
  'latchkey/mysql': 'mysqlBackend',
  'latchkey/postgres': 'postgresBackend',
  'latchkey/etcd': 'etcdBackend',
  'latchkey/fence': 'createFenceGuard',
  'latchkey/testing': 'describeBackendConformance',
  'latchkey/prometheus': 'prometheusMetrics',
  'latchkey/opentelemetry': 'openTelemetryInstrumentation',
}

/** The optional peer each subpath needs, named in the error require() throws without it. */
const peers = ['vitest', 'prom-client', '@opentelemetry/api']

/** The type of the subpath's main export, or the code of the error require() threw. */
function load(specifier) {
  try {
    return typeof require(specifier)[factories[specifier]]
  } catch (error) {
    // latchkey/testing, /prometheus and /opentelemetry import an optional peer: without it the message names it.
    const peer = peers.find((name) => String(error.message).includes(`'${name}'`))
    return `${error.code}: ${peer ?? error.message}`
  }
}

async function main() {
  const loaded = Object.fromEntries(Object.keys(factories).map((specifier) => [specifier, load(specifier)]))
  const { createLocks, isLockError, LockTimeoutError } = require('latchkey')
  const { memoryBackend } = require('latchkey/memory')
  // With prom-client installed, the lock below is counted by latchkey/prometheus.
  const metrics =
    loaded['latchkey/prometheus'] === 'function' ? require('latchkey/prometheus').prometheusMetrics() : null
  const backend = memoryBackend()
  const locks = createLocks({ backend, namespace: 'package-test', ...(metrics ? { onEvent: metrics.onEvent } : {}) })
  const lock = locks.mutex('cjs')
  const lease = await lock.acquire({ ttlMs: 5_000 })
  const timeout = await lock.acquire({ waitMs: 20 }).catch((error) => error)
  await lease.release()
  const again = await lock.tryAcquire()
  await again?.release()
  await locks.close()
  await backend.close()
  const result = {
    loaded,
    token: typeof lease.token,
    timedOut: timeout instanceof LockTimeoutError && isLockError(timeout),
    freeAfterRelease: again !== undefined,
    acquisitionsCounted: metrics
      ? (await metrics.registry.getMetricsAsJSON())
          .find((m) => m.name === 'latchkey_acquisitions_total')
          .values.reduce((sum, v) => sum + v.value, 0)
      : null,
  }
  process.stdout.write(`${JSON.stringify(result)}\n`)
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
