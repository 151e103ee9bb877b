/** Small helpers of the SQL fault tests. */
import { randomUUID } from 'node:crypto'
import type mysql from 'mysql2/promise'

/** A namespace no other run uses. */
export function namespace(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** The server thread ids of every connection a mysql2 pool has open (taking each once, then giving it back). */
export async function idsOf(pool: mysql.Pool): Promise<number[]> {
  const limit = (pool.pool.config as { connectionLimit?: number }).connectionLimit ?? 10
  const taken = await Promise.all(Array.from({ length: limit }, () => pool.getConnection()))
  const ids = taken.map((c) => c.threadId)
  for (const c of taken) c.release()
  return ids
}
