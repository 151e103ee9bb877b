/** The backend conformance suite on PostgreSQL, once per strategy. */
import { describeBackendConformance } from '../src/testing/index.js'
import { cleanupPostgres, postgresWithPool, SESSION_TIME_SCALE, TABLE_TIME_SCALE } from './support/sql-backends.js'

const module = new URL('./support/sql-backends.ts', import.meta.url).href

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
