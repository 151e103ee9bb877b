import { SessionBackend } from '../sql/sql-session-backend.js'
import type { MysqlConnection, MysqlRunner } from './mysql-client.js'

/**
 * What the MySQL session strategies (`get_lock`, `for_update`) share: their name and statements whose errors
 * come back mapped.
 */
export abstract class MysqlSessionBackend extends SessionBackend<MysqlConnection, MysqlRunner> {
  readonly name = 'mysql'

  /** One statement on `connection`; driver errors come back mapped (naming the server, password hidden). */
  protected async run(connection: MysqlConnection, sql: string, values: unknown[] = []): Promise<unknown> {
    try {
      return (await connection.query(sql, values))[0]
    } catch (error) {
      throw this.db.mapError(error)
    }
  }
}
