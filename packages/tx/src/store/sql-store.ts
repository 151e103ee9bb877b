import type { Backend } from 'latchkey'
import { StaleCoordinatorError, TxError } from '../errors.js'
import type { TxRecord, TxStatus, TxSummary } from '../types.js'
import { GroupCommit } from './group-commit.js'
import { initialRows } from './initial-rows.js'
import { type CteWrite, combine, pgCreate, pgWrite } from './pg-statements.js'
import { nowMsSql, schemaStatements } from './schema.js'
import type { SqlDriver, SqlQuery } from './sql-driver.js'
import { SqlRowLeases } from './sql-row-leases.js'
import { branch, entry, int, parse, summary } from './sql-rows.js'
import type { BranchChange, ListFilter, NewTx, TxChange, TxStore } from './types.js'

const UNFINISHED: readonly TxStatus[] = ['prepared', 'submitted', 'aborting']

const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))

/**
 * The log on any SQL database through a {@link SqlDriver}. Fencing: each write's first statement is
 * `UPDATE global SET fence = token ... WHERE gid = ? AND fence <= token`; it takes the row's write lock, so a
 * writer with a lower token that comes later (or waited on the lock) matches no row and the whole write is
 * refused with `StaleCoordinatorError`. On PostgreSQL each write is one statement (see `pg-statements.ts`);
 * elsewhere one database transaction.
 *
 * Row leases: the global row's `lease_until` (database clock, epoch ms) is the lease of the coordinator whose
 * token is in `fence`. `create` and every write extend it, {@link SqlTxStore.claim} takes an expired one over by
 * raising `fence`: the fencing token and the lease are one row, written by the writes the log makes anyway.
 */
export class SqlTxStore implements TxStore {
  readonly dialect: string
  private initialized: Promise<void> | undefined
  private readonly now: string
  private readonly leases: SqlRowLeases
  /** PostgreSQL: creates and transitions of concurrent transactions share statements (one commit for many). */
  private readonly group: GroupCommit | undefined

  constructor(
    private readonly driver: SqlDriver,
    private readonly p: string,
    makeLockBackend?: () => Backend,
  ) {
    this.dialect = driver.dialect
    this.now = nowMsSql(driver.dialect)
    this.leases = new SqlRowLeases(driver, p)
    if (driver.dialect === 'postgres') this.group = new GroupCommit(driver.query)
    if (makeLockBackend !== undefined) this.lockBackend = makeLockBackend
  }

  lockBackend?: () => Backend

  init(): Promise<void> {
    this.initialized ??= this.createTables().catch((error: unknown) => {
      this.initialized = undefined
      throw error
    })
    return this.initialized
  }

  private async createTables(): Promise<void> {
    const statements = schemaStatements(this.driver.dialect, this.p)
    if (this.driver.dialect !== 'postgres') {
      for (const sql of statements) await this.driver.query(sql)
    } else {
      // Concurrent CREATE TABLE IF NOT EXISTS can fail on PostgreSQL's catalog unique index: serialize them.
      await this.driver.transaction(async (q) => {
        await q('SELECT pg_advisory_xact_lock(hashtext(?))', [`${this.p}schema`])
        for (const sql of statements) await q(sql)
      })
    }
    await this.leases.addColumn()
  }

  async create(tx: NewTx, token: bigint, first?: TxChange): Promise<void> {
    const now = Date.now()
    const rows = initialRows(tx, first)
    try {
      if (this.group !== undefined) {
        if (await this.group.submit(tx.gid, (name) => pgCreate(name, this.p, tx, rows, token, now, this.now))) return
        throw new TxError(`Transaction ${tx.gid} already exists; use another gid`, {
          code: 'DUPLICATE_GID',
          gid: tx.gid,
        })
      }
      if (this.driver.dialect === 'postgres') {
        const { sql, params } = combine([pgCreate('', this.p, tx, rows, token, now, this.now)])
        if (Number((await this.driver.query(sql, params, { prepare: true })).rows[0]?.n0) === 1) return
        throw new TxError(`Transaction ${tx.gid} already exists; use another gid`, {
          code: 'DUPLICATE_GID',
          gid: tx.gid,
        })
      }
      await this.driver.transaction(async (q) => {
        const lease = rows.leaseMs === undefined || rows.leaseMs === 0 ? '0' : `${this.now} + ?`
        await q(
          `INSERT INTO ${this.p}global (gid, kind, name, status, parked_from, input, deadline_at, error, fence, version,
            created_at, updated_at, lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ${lease})`,
          [
            ...[tx.gid, tx.kind, tx.name, rows.status, rows.parkedFrom, json(tx.input), tx.deadlineAt, rows.error],
            ...[token, now, now],
            ...(lease === '0' ? [] : [rows.leaseMs]),
          ],
        )
        if (rows.branches.length > 0) {
          await q(
            `INSERT INTO ${this.p}branch (gid, branch, op, seq, status, attempts, result, last_error, updated_at)
              VALUES ${rows.branches.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
            rows.branches.flatMap((b) => [tx.gid, b.id, b.op, b.seq, b.status, b.attempts, b.result, b.lastError, now]),
          )
        }
        for (const e of rows.events) await this.history(q, tx.gid, token, now, e)
      })
    } catch (error) {
      if (error instanceof TxError) throw error
      const rows = await this.driver.query(`SELECT gid FROM ${this.p}global WHERE gid = ?`, [tx.gid]).catch(() => null)
      if (rows !== null && rows.rows.length > 0) {
        throw new TxError(`Transaction ${tx.gid} already exists; use another gid`, {
          code: 'DUPLICATE_GID',
          gid: tx.gid,
        })
      }
      throw error
    }
  }

  async write(gid: string, token: bigint, change: TxChange): Promise<void> {
    const now = Date.now()
    if (this.driver.dialect === 'postgres') {
      const applied =
        this.group !== undefined
          ? await this.group.submit(gid, (name) => pgWrite(name, this.p, gid, token, change, now, this.now))
          : await this.prepared(pgWrite('', this.p, gid, token, change, now, this.now))
      if (applied) return
      await this.refuse(this.driver.query, gid, token)
      const names = (change.branches ?? []).map((b) => `"${b.id}" (${b.op})`).join(', ')
      throw new TxError(`Transaction ${gid} has no branch among ${names}`, { code: 'NOT_FOUND', gid })
    }
    await this.driver.transaction(async (q) => {
      const lease =
        change.leaseMs === undefined ? [] : [change.leaseMs === 0 ? 'lease_until = 0' : `lease_until = ${this.now} + ?`]
      const { sets, params } = assignments(
        { fence: token, updated_at: now, status: change.status, parked_from: change.parkedFrom, error: change.error },
        'version = version + 1',
        ...lease,
      )
      if (change.leaseMs !== undefined && change.leaseMs !== 0) params.push(change.leaseMs)
      const claimed = await q(`UPDATE ${this.p}global SET ${sets.join(', ')} WHERE gid = ? AND fence <= ?`, [
        ...params,
        gid,
        token,
      ])
      if (claimed.affected === 0) {
        await this.refuse(q, gid, token)
        throw new TxError(`Transaction ${gid} changed under a fenced write; try again`, { code: 'CONFLICT', gid })
      }
      for (const b of change.branches ?? []) await this.updateBranch(q, gid, b, now)
      for (const e of [...(change.earlier ?? []), change.event]) await this.history(q, gid, token, now, e)
    })
  }

  private async prepared(write: CteWrite): Promise<boolean> {
    const { sql, params } = combine([write])
    return Number((await this.driver.query(sql, params, { prepare: true })).rows[0]?.n0) === 1
  }

  /** Throws why a fenced write matched no row: NOT_FOUND, or overtaken. Returns when neither is the reason. */
  private async refuse(q: SqlQuery, gid: string, token: bigint): Promise<void> {
    const { rows } = await q(`SELECT fence FROM ${this.p}global WHERE gid = ?`, [gid])
    const row = rows[0]
    if (row === undefined) throw new TxError(`Transaction ${gid} does not exist`, { code: 'NOT_FOUND', gid })
    const current = BigInt(String(row.fence))
    if (current > token) throw new StaleCoordinatorError(gid, token, current)
  }

  private async updateBranch(q: SqlQuery, gid: string, b: BranchChange, now: number): Promise<void> {
    const result = b.result === undefined ? undefined : json(b.result)
    const { sets, params } = assignments({
      updated_at: now,
      status: b.status,
      attempts: b.attempts,
      result,
      last_error: b.lastError,
    })
    const r = await q(`UPDATE ${this.p}branch SET ${sets.join(', ')} WHERE gid = ? AND branch = ? AND op = ?`, [
      ...params,
      gid,
      b.id,
      b.op,
    ])
    if (r.affected === 0) {
      throw new TxError(`Transaction ${gid} has no branch "${b.id}" (${b.op})`, { code: 'NOT_FOUND', gid })
    }
  }

  private async history(q: SqlQuery, gid: string, token: bigint, now: number, e: TxChange['event']): Promise<void> {
    await q(`INSERT INTO ${this.p}history (gid, branch, op, type, detail, fence, at) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
      gid,
      e.branch ?? null,
      e.op ?? null,
      e.type,
      e.detail ?? null,
      token,
      now,
    ])
  }

  async load(gid: string): Promise<TxRecord | undefined> {
    const g = (await this.driver.query(`SELECT * FROM ${this.p}global WHERE gid = ?`, [gid])).rows[0]
    if (g === undefined) return undefined
    const branches = await this.driver.query(`SELECT * FROM ${this.p}branch WHERE gid = ? ORDER BY seq, op`, [gid])
    const history = await this.driver.query(`SELECT * FROM ${this.p}history WHERE gid = ? ORDER BY id`, [gid])
    return {
      ...summary(g),
      input: parse(g.input),
      deadlineAt: g.deadline_at === null ? null : int(g.deadline_at),
      token: BigInt(String(g.fence)),
      branches: branches.rows.map(branch),
      history: history.rows.map(entry),
    }
  }

  async list(filter: ListFilter = {}): Promise<TxSummary[]> {
    const where: string[] = []
    const params: unknown[] = []
    if (filter.status !== undefined) {
      where.push('status = ?')
      params.push(filter.status)
    }
    if (filter.kind !== undefined) {
      where.push('kind = ?')
      params.push(filter.kind)
    }
    const limit = Math.floor(filter.limit ?? 100)
    const sql = `SELECT gid, kind, name, status, parked_from, error, created_at, updated_at FROM ${this.p}global
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, gid LIMIT ${limit}`
    return (await this.driver.query(sql, params)).rows.map(summary)
  }

  async unfinished(limit: number, options: { readonly claimable?: boolean } = {}): Promise<string[]> {
    const claimable = options.claimable === true ? ` AND lease_until <= ${this.now}` : ''
    const { rows } = await this.driver.query(
      `SELECT gid FROM ${this.p}global WHERE status IN (?, ?, ?)${claimable} ORDER BY updated_at LIMIT ${Math.floor(limit)}`,
      UNFINISHED,
    )
    return rows.map((r) => String(r.gid))
  }

  claim(gid: string, leaseMs: number): Promise<bigint | undefined> {
    return this.leases.claim(gid, leaseMs)
  }

  renew(gid: string, token: bigint, leaseMs: number): Promise<boolean> {
    return this.leases.renew(gid, token, leaseMs)
  }

  release(gid: string, token: bigint): Promise<void> {
    return this.leases.release(gid, token)
  }

  async remove(gids: readonly string[]): Promise<void> {
    if (gids.length === 0) return
    const marks = gids.map(() => '?').join(', ')
    await this.driver.transaction(async (q) => {
      for (const t of ['history', 'branch', 'global'])
        await q(`DELETE FROM ${this.p}${t} WHERE gid IN (${marks})`, gids)
    })
  }

  close(): Promise<void> {
    return this.driver.close()
  }
}

/** `col = ?` assignments for the defined values (undefined means "keep"), plus fixed `extra` ones. */
function assignments(values: Record<string, unknown>, ...extra: string[]): { sets: string[]; params: unknown[] } {
  const defined = Object.entries(values).filter(([, v]) => v !== undefined)
  return { sets: [...defined.map(([col]) => `${col} = ?`), ...extra], params: defined.map(([, v]) => v) }
}
