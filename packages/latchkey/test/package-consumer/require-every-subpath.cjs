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
}

/** The type of the subpath's main export, or the code of the error require() threw. */
function load(specifier) {
  try {
    return typeof require(specifier)[factories[specifier]]
  } catch (error) {
    // latchkey/testing imports vitest, an optional peer: without it the message must name it.
    return `${error.code}: ${String(error.message).includes("'vitest'") ? 'vitest' : error.message}`
  }
}

async function main() {
  const loaded = Object.fromEntries(Object.keys(factories).map((specifier) => [specifier, load(specifier)]))
  const { createLocks, isLockError, LockTimeoutError } = require('latchkey')
  const { memoryBackend } = require('latchkey/memory')
  const backend = memoryBackend()
  const locks = createLocks({ backend, namespace: 'package-test' })
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
  }
  process.stdout.write(`${JSON.stringify(result)}\n`)
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
