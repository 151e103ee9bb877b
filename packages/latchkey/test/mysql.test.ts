/** The backend conformance suite on MariaDB / MySQL, once per strategy. */
import { describeBackendConformance } from '../src/testing/index.js'
import { cleanupMysql, mysqlWithPool, SESSION_TIME_SCALE, TABLE_TIME_SCALE } from './support/sql-backends.js'

const module = new URL('./support/sql-backends.ts', import.meta.url).href

describeBackendConformance('mysql table', () => mysqlWithPool('table'), {
  processBackend: { module, export: 'createMysqlTable' },
  cleanup: cleanupMysql,
  timeScale: TABLE_TIME_SCALE,
})

describeBackendConformance('mysql get_lock', () => mysqlWithPool('get_lock'), {
  processBackend: { module, export: 'createMysqlGetLock' },
  cleanup: cleanupMysql,
  timeScale: SESSION_TIME_SCALE,
})

describeBackendConformance('mysql for_update', () => mysqlWithPool('for_update'), {
  processBackend: { module, export: 'createMysqlForUpdate' },
  cleanup: cleanupMysql,
  timeScale: SESSION_TIME_SCALE,
})
