import { type Dialect, leaseColumn, nowMsSql } from './schema.js'
import type { SqlDriver } from './sql-driver.js'

/**
 * Row leases in the log: the global row's `lease_until` (the database's clock, epoch ms) is the lease of the
 * coordinator whose token is in `fence`. The log's create and writes take and extend it in the same statements;
 * these are the few lease operations that are statements of their own.
 */
export class SqlRowLeases {
  private readonly now: string

  constructor(
    private readonly driver: SqlDriver,
    private readonly p: string,
  ) {
    this.now = nowMsSql(driver.dialect)
  }

  /** A log created before row leases lacks `lease_until`: adds it (a concurrent adder may win the race). */
  async addColumn(): Promise<void> {
    const { probe, add } = leaseColumn(this.driver.dialect as Dialect, this.p)
    const has = () =>
      this.driver.query(probe).then(
        () => true,
        () => false,
      )
    if (await has()) return
    await this.driver.query(add).catch(async (error: unknown) => {
      if (!(await has())) throw error
    })
  }

  /** Takes an expired or released lease over, raising the token: one UPDATE. */
  async claim(gid: string, leaseMs: number): Promise<bigint | undefined> {
    const take = `UPDATE ${this.p}global SET fence = fence + 1, lease_until = ${this.now} + ?
      WHERE gid = ? AND lease_until <= ${this.now}`
    if (this.driver.dialect === 'postgres') {
      const { rows } = await this.driver.query(`${take} RETURNING fence`, [leaseMs, gid])
      return rows[0] === undefined ? undefined : BigInt(String(rows[0].fence))
    }
    return this.driver.transaction(async (q) => {
      if ((await q(take, [leaseMs, gid])).affected === 0) return undefined
      const { rows } = await q(`SELECT fence FROM ${this.p}global WHERE gid = ?`, [gid])
      return rows[0] === undefined ? undefined : BigInt(String(rows[0].fence))
    })
  }

  async renew(gid: string, token: bigint, leaseMs: number): Promise<boolean> {
    const r = await this.driver.query(
      `UPDATE ${this.p}global SET lease_until = ${this.now} + ? WHERE gid = ? AND fence = ?`,
      [leaseMs, gid, token],
    )
    if (r.affected > 0) return true
    // MySQL counts changed rows only: an unchanged lease (same millisecond) is still ours if the token is.
    const { rows } = await this.driver.query(`SELECT fence FROM ${this.p}global WHERE gid = ?`, [gid])
    return rows[0] !== undefined && BigInt(String(rows[0].fence)) === token
  }

  async release(gid: string, token: bigint): Promise<void> {
    await this.driver.query(`UPDATE ${this.p}global SET lease_until = 0 WHERE gid = ? AND fence = ?`, [gid, token])
  }
}
