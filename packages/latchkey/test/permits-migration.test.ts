/**
 * The SQL backends record a semaphore holder's permit count in a `permits` column of `latchkey_holders`. A table
 * created by an earlier version lacks it: the backend adds it on first use. Each case builds such a table in a
 * private database / schema / file and drops it afterwards.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import { mysqlBackend } from '../src/backends/mysql/index.js'
import { postgresBackend } from '../src/backends/postgres/index.js'
import { sqliteBackend } from '../src/backends/sqlite/index.js'
import { createLocks } from '../src/core/locks.js'
import { PermitsMismatchError } from '../src/errors.js'
import { mysqlPool, postgresPool } from './support/sql-backends.js'

/** `latchkey_holders` as versions before the permits column created it. */
const OLD_HOLDERS = (key: string, owner: string, text: string) => `CREATE TABLE latchkey_holders (
  lock_key ${key} NOT NULL, owner ${owner} NOT NULL, kind ${text} NOT NULL, expires_at BIGINT NOT NULL,
  delay_until BIGINT NOT NULL, token BIGINT NOT NULL, PRIMARY KEY (lock_key, owner))`

/** Takes a 1-permit semaphore, then asks 5 (the count must be in the added column); closes the backend. */
async function expectCountsEnforced(backend: Backend): Promise<void> {
  const locks = createLocks({ backend, namespace: 'mig' })
  try {
    const held = await locks.semaphore('s', { permits: 1 }).acquire()
    await expect(locks.semaphore('s', { permits: 5 }).tryAcquire()).rejects.toBeInstanceOf(PermitsMismatchError)
    await held.release()
  } finally {
    await locks.close()
    await backend.close()
  }
}

describe('permits column migration', () => {
  it('sqlite: a holders table without permits gets the column when the backend opens the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-mig-'))
    try {
      const path = join(dir, 'old.db')
      const old = new Database(path)
      old.exec(`${OLD_HOLDERS('TEXT', 'TEXT', 'TEXT')} WITHOUT ROWID`)
      old.close()
      await expectCountsEnforced(sqliteBackend({ path }))
      const reopened = new Database(path)
      const columns = reopened.prepare('PRAGMA table_info(latchkey_holders)').all() as { name: string }[]
      reopened.close()
      expect(columns.map((c) => c.name)).toContain('permits')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('mysql table: a holders table without permits gets the column on first use', async () => {
    const database = `lk_mig_${randomUUID().slice(0, 8)}`
    const admin = mysqlPool({ connectionLimit: 1 })
    await admin.query(`CREATE DATABASE ${database}`)
    const pool = mysqlPool({ database })
    try {
      await pool.query(OLD_HOLDERS('VARBINARY(2048)', 'VARBINARY(128)', 'VARCHAR(16)'))
      await expectCountsEnforced(mysqlBackend({ pool, strategy: 'table' }))
      const [rows] = await pool.query(
        "SELECT COUNT(*) AS n FROM information_schema.columns WHERE table_schema = ? AND column_name = 'permits'",
        [database],
      )
      expect(Number((rows as { n: number }[])[0]?.n)).toBe(1)
    } finally {
      await pool.end()
      await admin.query(`DROP DATABASE ${database}`)
      await admin.end()
    }
  })

  it('postgres table: a holders table without permits gets the column on first use', async () => {
    const schema = `lk_mig_${randomUUID().slice(0, 8)}`
    const admin = postgresPool({ max: 1 })
    await admin.query(`CREATE SCHEMA ${schema}`)
    const pool = postgresPool({ options: `-c search_path=${schema}` })
    try {
      await pool.query(OLD_HOLDERS('BYTEA', 'TEXT', 'TEXT'))
      await expectCountsEnforced(postgresBackend({ pool, strategy: 'table' }))
      const { rows } = await pool.query(
        "SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'permits'",
        [schema],
      )
      expect(rows[0]?.n).toBe(1)
    } finally {
      await pool.end()
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
      await admin.end()
    }
  })
})
