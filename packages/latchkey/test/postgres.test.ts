/** The backend conformance suite on PostgreSQL, once per strategy. */
import { describeBackendConformance } from '../src/testing/index.js'
import { cleanupPostgres, postgresWithPool } from './support/sql-backends.js'

const module = new URL('./support/sql-backends.ts', import.meta.url).href

/**
 * Times of the suite are scaled (its documented knob for slow backends): every call here is a network round
 * trip to a server shared with other test runs on a 2-core machine, where a round trip now and then takes
 * 20-60 ms, more than the 30 ms renew period of the suite's 90 ms leases. The table strategy also commits
 * (fsync) on every acquire, renew and release, and grants of one lock are serialised on its row: one grant
 * took 10-30 ms under that load, more than the suite's 10 ms semaphore hold.
 */
const SESSION_TIME_SCALE = 2
const TABLE_TIME_SCALE = 3

describeBackendConformance('postgres table', () => postgresWithPool('table'), {
  processBackend: { module, export: 'createPostgresTable' },
  cleanup: cleanupPostgres,
  timeScale: TABLE_TIME_SCALE,
})

describeBackendConformance('postgres advisory', () => postgresWithPool('advisory'), {
  processBackend: { module, export: 'createPostgresAdvisory' },
  cleanup: cleanupPostgres,
  timeScale: SESSION_TIME_SCALE,
})
