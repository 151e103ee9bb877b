// ES module code using the installed tarball (run by test/package.test.ts in a fresh folder): loads latchkey
// by import and by require in one process, takes a lock through one and checks its errors through the other,
// and prints what it saw as one JSON line.
import { createRequire } from 'node:module'

const esm = await import('latchkey')
const { memoryBackend } = await import('latchkey/memory')
const cjs = createRequire(import.meta.url)('latchkey')

const backend = memoryBackend()
const locks = esm.createLocks({ backend, namespace: 'package-test' })
const lease = await locks.mutex('esm').acquire({ ttlMs: 5_000 })
const esmError = await locks
  .mutex('esm')
  .acquire({ waitMs: 20 })
  .catch((error) => error)
await lease.release()
const again = await locks.mutex('esm').tryAcquire()
await again?.release()
await locks.close()
await backend.close()

const cjsError = new cjs.LockTimeoutError('from-require', 1)
const result = {
  sameModule: esm.LockError === cjs.LockError && esm.createLocks === cjs.createLocks,
  esmErrorSeenByRequire: cjs.isLockError(esmError) && esmError instanceof cjs.LockTimeoutError,
  requireErrorSeenByImport: esm.isLockError(cjsError) && cjsError instanceof esm.LockError,
  freeAfterRelease: again !== undefined,
}
process.stdout.write(`${JSON.stringify(result)}\n`)
