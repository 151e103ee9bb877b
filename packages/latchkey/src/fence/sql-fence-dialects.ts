/**
 * The `latchkey_fence` table (name PRIMARY KEY, highest token admitted) in each SQL dialect, and its atomic
 * admit: write the token only if it is not lower than the row's, and tell which happened. No driver is
 * imported: each dialect takes the application's pool through a small structural type.
 */
import { type MysqlResultHeader, matchedRows } from '../backends/mysql/mysql-client.js'

/** The answer of a store's admit. */
export type AdmitResult = { admitted: boolean; highest: bigint }

/** One dialect's table and admit. */
export interface FenceDialect {
  readonly name: 'postgres' | 'mysql' | 'sqlite'
  /** Creates the table if missing. */
  createTable(): Promise<void>
  admit(name: string, token: bigint): Promise<AdmitResult>
}

/** The slice of a `pg` Pool the store uses (`pool.query` checks a client out and back in). */
export interface PgPoolLike {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>
  connect(): Promise<unknown>
}

/** The slice of a `mysql2/promise` pool the store uses (a callback pool is taken through its `.promise()`). */
export interface MysqlPoolLike {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>
  getConnection(): Promise<unknown>
}

/** The slice of a better-sqlite3 `Database` the store uses. */
export interface SqliteDatabaseLike {
  prepare(source: string): {
    run(...params: unknown[]): unknown
    get(...params: unknown[]): unknown
    safeIntegers(on?: boolean): unknown
  }
  exec(source: string): unknown
}

const TABLE = 'latchkey_fence'

/** PostgreSQL: one upsert whose update applies only when the stored token is not higher; RETURNING tells. */
export function postgresFence(pool: PgPoolLike): FenceDialect {
  const highest = async (name: Buffer) =>
    (await pool.query(`SELECT token::text AS token FROM ${TABLE} WHERE name = $1`, [name])).rows[0]?.token
  return {
    name: 'postgres',
    async createTable() {
      // BYTEA: a name may hold a NUL byte, which TEXT refuses.
      const ddl = `CREATE TABLE IF NOT EXISTS ${TABLE} (name BYTEA NOT NULL PRIMARY KEY, token BIGINT NOT NULL)`
      await pool.query(ddl).catch((error: unknown) => {
        // Two sessions creating it at once: the loser fails on the catalog's unique index; the table exists.
        const code = (error as { code?: unknown }).code
        if (code !== '23505' && code !== '42P07') throw error
      })
    },
    async admit(name, token) {
      const key = Buffer.from(name, 'utf8')
      const { rows } = await pool.query(
        `INSERT INTO ${TABLE} AS f (name, token) VALUES ($1, $2::bigint)
         ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token WHERE f.token <= EXCLUDED.token
         RETURNING token::text AS token`,
        [key, token.toString()],
      )
      if (rows.length > 0) return { admitted: true, highest: token }
      return { admitted: false, highest: BigInt(String(await highest(key))) }
    },
  }
}

/**
 * MySQL / MariaDB: no RETURNING, and the affected-rows count of `INSERT ... ON DUPLICATE KEY UPDATE` is the
 * same for an equal token (admitted) and a lower one (rejected): both leave the row unchanged. So a
 * conditional UPDATE decides when the row exists ("Rows matched" counts an equal token too), an INSERT when
 * it does not, and a duplicate-key failure of that INSERT (another admit created the row meanwhile) sends it
 * back to the UPDATE. Each decision is one atomic statement; rows are never deleted, so an UPDATE matching
 * nothing after the row exists means a higher token is stored.
 */
export function mysqlFence(pool: MysqlPoolLike): FenceDialect {
  const key = (name: string) => Buffer.from(name, 'utf8')
  const update = async (name: string, token: string) => {
    const sql = `UPDATE ${TABLE} SET token = CAST(? AS SIGNED) WHERE name = ? AND token <= CAST(? AS SIGNED)`
    const [header] = await pool.query(sql, [token, key(name), token])
    return matchedRows(header as MysqlResultHeader) > 0
  }
  return {
    name: 'mysql',
    async createTable() {
      // VARBINARY: names compare byte for byte (the default collations ignore case and trailing spaces).
      await pool.query(
        `CREATE TABLE IF NOT EXISTS ${TABLE} (name VARBINARY(2048) NOT NULL PRIMARY KEY, token BIGINT NOT NULL) ENGINE=InnoDB`,
      )
    },
    async admit(name, token) {
      const t = token.toString()
      if (await update(name, t)) return { admitted: true, highest: token }
      try {
        await pool.query(`INSERT INTO ${TABLE} (name, token) VALUES (?, CAST(? AS SIGNED))`, [key(name), t])
        return { admitted: true, highest: token }
      } catch (error) {
        if ((error as { errno?: unknown }).errno !== 1062) throw error // ER_DUP_ENTRY
      }
      if (await update(name, t)) return { admitted: true, highest: token }
      const [rows] = await pool.query(`SELECT CAST(token AS CHAR) AS token FROM ${TABLE} WHERE name = ?`, [key(name)])
      return { admitted: false, highest: BigInt(String((rows as { token: string }[])[0]?.token)) }
    },
  }
}

/** SQLite: the PostgreSQL upsert (SQLite >= 3.35 has RETURNING); better-sqlite3 runs it synchronously. */
export function sqliteFence(db: SqliteDatabaseLike): FenceDialect {
  let statements: { upsert: ReturnType<SqliteDatabaseLike['prepare']>; read: ReturnType<SqliteDatabaseLike['prepare']> }
  return {
    name: 'sqlite',
    async createTable() {
      db.exec(
        `CREATE TABLE IF NOT EXISTS ${TABLE} (name TEXT NOT NULL PRIMARY KEY, token INTEGER NOT NULL) WITHOUT ROWID`,
      )
      const upsert = db.prepare(
        `INSERT INTO ${TABLE} (name, token) VALUES (?, ?)
         ON CONFLICT (name) DO UPDATE SET token = excluded.token WHERE token <= excluded.token
         RETURNING token`,
      )
      const read = db.prepare(`SELECT token FROM ${TABLE} WHERE name = ?`)
      // Tokens beyond 2^53 come back exact as bigint.
      read.safeIntegers(true)
      upsert.safeIntegers(true)
      statements = { upsert, read }
    },
    async admit(name, token) {
      if (statements.upsert.get(name, token) !== undefined) return { admitted: true, highest: token }
      return { admitted: false, highest: BigInt((statements.read.get(name) as { token: bigint }).token) }
    },
  }
}
