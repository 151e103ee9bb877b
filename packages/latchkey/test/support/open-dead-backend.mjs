// Child process of backend-exit.test.ts: opens the backend for argv[2] from the built package, tries one lock,
// closes everything and then must exit by itself (no timer, socket or reconnect loop left behind).
import { backendFromUrl, createLocks } from '../../dist/index.js'

const backend = await backendFromUrl(process.argv[2])
const locks = createLocks({ backend, namespace: 'exit-check' })
const outcome = await locks
  .mutex('probe')
  .tryAcquire()
  .then(
    (lease) => (lease === undefined ? 'not acquired' : 'acquired'),
    (error) => error.name,
  )
await locks.close()
await backend.close()
process.stdout.write(`${outcome}\n`)
