/** The log's tables per dialect. `p` is the table prefix (checked to be a plain identifier). */

export type Dialect = 'sqlite' | 'postgres' | 'mysql'

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,40}$/

/** Checks a table prefix: letters, digits and underscores, so it can be spliced into SQL. */
export function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || !IDENT.test(prefix)) {
    throw new RangeError(
      `latchkey-tx: tablePrefix must be a plain SQL identifier (letters, digits, _; at most 41 chars), received ${JSON.stringify(prefix)}`,
    )
  }
  return prefix
}

/** Default table prefix: tables `latchkey_tx_global`, `latchkey_tx_branch`, `latchkey_tx_history`. */
export const DEFAULT_PREFIX = 'latchkey_tx_'

/**
 * The column types and table suffix the three dialects spell differently, shared by every table of the package:
 * an indexed string (`key`: 191 characters is what an InnoDB utf8mb4 index takes), free text, a 64-bit integer,
 * an auto-increment primary key, and MySQL's engine clause.
 */
export function columnTypes(dialect: Dialect): {
  key: string
  text: string
  big: string
  serial: string
  engine: string
} {
  return {
    key: dialect === 'sqlite' ? 'TEXT' : 'VARCHAR(191)',
    text: dialect === 'mysql' ? 'MEDIUMTEXT' : 'TEXT',
    big: dialect === 'sqlite' ? 'INTEGER' : 'BIGINT',
    serial:
      dialect === 'sqlite'
        ? 'INTEGER PRIMARY KEY AUTOINCREMENT'
        : dialect === 'postgres'
          ? 'BIGSERIAL PRIMARY KEY'
          : 'BIGINT AUTO_INCREMENT PRIMARY KEY',
    engine: dialect === 'mysql' ? ' ENGINE=InnoDB DEFAULT CHARSET=utf8mb4' : '',
  }
}

/** CREATE statements, each idempotent. */
export function schemaStatements(dialect: Dialect, p: string): string[] {
  const { key, text, big, serial, engine } = columnTypes(dialect)
  // MySQL has no CREATE INDEX IF NOT EXISTS: its indexes are declared inside CREATE TABLE instead.
  const inline = (cols: string) => (dialect === 'mysql' ? `, INDEX (${cols})` : '')
  const index = (name: string, table: string, cols: string) =>
    dialect === 'mysql' ? [] : [`CREATE INDEX IF NOT EXISTS ${p}${name} ON ${p}${table} (${cols})`]
  // PostgreSQL: the rows a transaction rewrites at every step leave free room in their pages (fillfactor) and
  // index no column a step changes (only unfinished rows are indexed by status), so a step's update is HOT: a
  // new row version on the same page and no index entries, instead of one per index.
  const hot = dialect === 'postgres' ? ' WITH (fillfactor = 50)' : ''
  const statusIndex =
    dialect === 'postgres'
      ? [
          `CREATE INDEX IF NOT EXISTS ${p}global_unfinished ON ${p}global (status)
            WHERE status IN ('prepared', 'submitted', 'aborting')`,
        ]
      : index('global_status', 'global', 'status, updated_at')
  return [
    `CREATE TABLE IF NOT EXISTS ${p}global (
      gid ${key} NOT NULL PRIMARY KEY, kind VARCHAR(16) NOT NULL, name ${key} NOT NULL, status VARCHAR(16) NOT NULL,
      parked_from VARCHAR(16), input ${text}, deadline_at ${big}, error ${text}, fence ${big} NOT NULL,
      version ${big} NOT NULL, created_at ${big} NOT NULL, updated_at ${big} NOT NULL,
      lease_until ${big} NOT NULL DEFAULT 0${inline('status, updated_at')})${engine}${hot}`,
    `CREATE TABLE IF NOT EXISTS ${p}branch (
      gid ${key} NOT NULL, branch ${key} NOT NULL, op VARCHAR(16) NOT NULL, seq INTEGER NOT NULL,
      status VARCHAR(16) NOT NULL, attempts INTEGER NOT NULL, result ${text}, last_error ${text},
      updated_at ${big} NOT NULL, PRIMARY KEY (gid, branch, op))${engine}${hot}`,
    `CREATE TABLE IF NOT EXISTS ${p}history (
      id ${serial}, gid ${key} NOT NULL, branch ${key}, op VARCHAR(16), type VARCHAR(32) NOT NULL,
      detail ${text}, fence ${big} NOT NULL, at ${big} NOT NULL${inline('gid, id')})${engine}`,
    ...statusIndex,
    ...index('history_gid', 'history', 'gid, id'),
  ]
}

/** The row-lease column, added to a log created before it existed. */
export function leaseColumn(dialect: Dialect, p: string): { probe: string; add: string } {
  return {
    probe: `SELECT lease_until FROM ${p}global WHERE 1 = 0`,
    add: `ALTER TABLE ${p}global ADD COLUMN lease_until ${columnTypes(dialect).big} NOT NULL DEFAULT 0`,
  }
}

/**
 * The database's clock in epoch milliseconds, as an SQL expression: row leases are timed by the one clock every
 * coordinator sharing the log reads, never by each host's own (SQLite's is the host's, which its processes share).
 */
export function nowMsSql(dialect: Dialect): string {
  if (dialect === 'postgres') return '(floor(extract(epoch FROM clock_timestamp()) * 1000))::bigint'
  if (dialect === 'mysql') return "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"
  return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}
