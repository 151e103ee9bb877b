/** Options of {@link fencedUpdate}. */
export interface FencedUpdateOptions {
  table: string
  /** Columns to set. */
  set: Record<string, unknown>
  /** Equality conditions identifying the row(s). */
  where: Record<string, unknown>
  /** The writer's `lease.token`. */
  token: bigint
  /** The column holding the highest token written so far. Default `fence_token`. */
  column?: string
  /** Placeholder style: `?` (MySQL, SQLite) or `$n` (PostgreSQL). Default `?`. */
  placeholders?: '?' | '$'
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/

function ident(what: string, name: string): string {
  if (!IDENT.test(name))
    throw new RangeError(`latchkey: ${what} must be a plain SQL identifier, received ${JSON.stringify(name)}`)
  return name
}

/**
 * Builds a fenced `UPDATE`: it writes only when `token` is not lower than the row's fence column, and
 * records `token` there, so a holder that lost its lock cannot overwrite its successor's work. Zero affected
 * rows means the write was stale (or the row is missing). Values always travel as parameters.
 *
 * A read-check-write needs the fence on the read too: if A (token 5) and then B (token 6) both read the row
 * before either writes, A's write passes (the fence is still <= 5) and B's passes after it, both acting on the
 * same stale read. Claim the row when reading (`UPDATE ... SET fence_token = ? WHERE id = ? AND fence_token <= ?
 * RETURNING ...`) so that an overtaken holder's later write fails. The flash-sale service's `lock` strategy
 * does exactly that.
 *
 * @example
 * const { sql, params } = fencedUpdate({ table: 'stock', set: { remain: 9 }, where: { id: 1 }, token: lease.token })
 * // UPDATE stock SET remain = ?, fence_token = ? WHERE id = ? AND fence_token <= ?
 */
export function fencedUpdate(options: FencedUpdateOptions): { sql: string; params: unknown[] } {
  const column = ident('column', options.column ?? 'fence_token')
  if (typeof options.token !== 'bigint') throw new TypeError('latchkey: token must be a bigint (lease.token)')
  const params: unknown[] = []
  const p = (value: unknown): string => {
    params.push(value)
    return options.placeholders === '$' ? `$${params.length}` : '?'
  }
  const sets = Object.entries(options.set).map(([k, v]) => `${ident('set column', k)} = ${p(v)}`)
  if (sets.length === 0) throw new RangeError('latchkey: set must name at least one column')
  sets.push(`${column} = ${p(options.token)}`)
  const wheres = Object.entries(options.where).map(([k, v]) => `${ident('where column', k)} = ${p(v)}`)
  wheres.push(`${column} <= ${p(options.token)}`)
  return { sql: `UPDATE ${ident('table', options.table)} SET ${sets.join(', ')} WHERE ${wheres.join(' AND ')}`, params }
}
