/**
 * A coordinator process for the XA crash test: `xa-coordinator.ts <storeUrl> <table> <gid> <amount>`. It runs
 * one XA transfer (MariaDB account 1 → PostgreSQL account 2); started with `LATCHKEY_TX_CRASH_AT` it SIGKILLs
 * itself at that point. Its lease is short so that recovery starts soon after.
 */
import mysql from 'mysql2/promise'
import pg from 'pg'
import { createCoordinator } from '../../src/index.js'
import { MYSQL_URL, POSTGRES_URL } from './databases.js'
import { transferBody } from './xa-bank.js'

const [storeUrl, table, gid, amount] = process.argv.slice(2)
if (storeUrl === undefined || table === undefined || gid === undefined || amount === undefined) {
  throw new Error('usage: xa-coordinator.ts <storeUrl> <table> <gid> <amount>')
}
// Never outlive a test that forgot to kill us.
setTimeout(() => process.exit(3), 30_000).unref()
const maria = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 4 })
const pgPool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 })
const tc = createCoordinator({
  store: storeUrl,
  recover: false,
  leaseTtlMs: 600,
  retry: { firstMs: 5, maxMs: 20 },
  resources: { maria, pg: pgPool },
})
const result = await tc.xa('transfer', transferBody(table, Number(amount)), { gid })
process.stdout.write(`finished ${result.status}\n`)
await tc.close()
await maria.end()
await pgPool.end()
