import { SessionBackend } from '../sql/sql-session-backend.js'
import { isFatal, type MysqlConnection, type MysqlRunner, mapError } from './mysql-client.js'

/**
 * What the MySQL session strategies (`get_lock`, `for_update`) share: a lock pins a mysql2 pool connection,
 * which goes back to the pool after a confirmed unlock and is destroyed otherwise (it may still hold the lock).
 */
export abstract class MysqlSessionBackend extends SessionBackend<MysqlConnection> {
  readonly name = 'mysql'

  constructor(protected readonly db: MysqlRunner) {
    super()
  }

  protected connect(): Promise<MysqlConnection> {
    return this.db.connect()
  }

  protected giveBack(connection: MysqlConnection, healthy: boolean): void {
    if (healthy) connection.release()
    else connection.destroy()
  }

  protected isFatal(error: unknown): boolean {
    return isFatal(error)
  }

  /** One statement on `connection`; driver errors come back mapped (naming the server, password hidden). */
  protected async run(connection: MysqlConnection, sql: string, values: unknown[] = []): Promise<unknown> {
    try {
      return (await connection.query(sql, values))[0]
    } catch (error) {
      throw mapError(error, this.db.backendName, this.db.secrets)
    }
  }
}
