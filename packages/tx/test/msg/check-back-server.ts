/**
 * A producer's check-back endpoint as its own process (DTM's QueryPrepared over HTTP): `check-back-server.ts
 * <sqlitePath> <barrierTable>`. Prints `listening <port>`, then `asking <gid>` before each `queryPrepared` and
 * `answered <outcome>` after. Its own process, so that its wait for the producer's SQLite write lock (a
 * synchronous busy wait in better-sqlite3) blocks nobody else.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import Database from 'better-sqlite3'
import { queryPrepared } from '../../src/index.js'

const [path, table] = process.argv.slice(2)
if (path === undefined || table === undefined) throw new Error('usage: check-back-server.ts <sqlitePath> <table>')
setTimeout(() => process.exit(3), 60_000).unref()
const db = new Database(path, { timeout: 20_000 })
const server = createServer((req, res) => {
  const gid = new URL(req.url ?? '', 'http://x').searchParams.get('gid') ?? ''
  process.stdout.write(`asking ${gid}\n`)
  queryPrepared(db, gid, { table }).then(
    (outcome) => {
      process.stdout.write(`answered ${outcome}\n`)
      res.writeHead(outcome === 'committed' ? 200 : 409).end()
    },
    (error: Error) => {
      process.stdout.write(`failed ${error.message}\n`)
      res.writeHead(500).end()
    },
  )
}).listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`)
})
process.once('SIGTERM', () => {
  server.close()
  db.close()
  process.exit(0)
})
