/**
 * What the `mysql://` and `postgres://` URL openers share: the database name of the path, and a backend that
 * owns the pool it was opened on.
 */
import type { Backend } from '../../backend/types.js'
import { type SingleHostUrl, shownUrl } from '../../backend/url-parts.js'

/** The database of a SQL URL's path (`/test`), undefined for none; `RangeError` for anything else. */
export function databaseOf(path: string, example: string, url: string): string | undefined {
  if (path === '' || path === '/') return undefined
  const db = /^\/([^/]+)\/?$/.exec(path)?.[1]
  if (db === undefined) {
    throw new RangeError(
      `latchkey: the path of a SQL URL is one database name (${example}), received ${JSON.stringify(path)} in ${shownUrl(url)}`,
    )
  }
  try {
    return decodeURIComponent(db)
  } catch {
    throw new RangeError(`latchkey: the database name is not valid percent-encoding, in ${shownUrl(url)}`)
  }
}

/** `make(pool)`, whose `close()` also ends the pool; the pool is ended at once when `make` throws. */
export async function owningPool<P extends { end(): Promise<void> }>(
  pool: P,
  make: (pool: P) => Backend,
): Promise<Backend> {
  let backend: Backend
  try {
    backend = make(pool)
  } catch (error) {
    await pool.end()
    throw error
  }
  const close = backend.close.bind(backend)
  return Object.assign(backend, {
    close: async () => {
      await close()
      // mysql2's end() rejects with the connect error of a connection still being opened when it is called (an
      // acquire abandoned at its deadline against a dead server leaves one). The pool is closed all the same, and
      // that error already reached the acquire that opened the connection: close() has nothing left to report.
      await pool.end().catch(() => undefined)
    },
  })
}

/** latchkey's options read from a SQL URL, unset ones left out (the factories' options are exact-optional). */
export interface UrlBackendOptions<P, S extends string> {
  readonly pool: P
  readonly strategy?: S
  readonly connectTimeoutMs?: number
}

/** The factory options of a parsed URL, on the pool opened for it. */
export function urlBackendOptions<P, S extends string>(
  pool: P,
  parsed: { readonly strategy: S | undefined; readonly connectTimeoutMs: number | undefined },
): UrlBackendOptions<P, S> {
  return {
    pool,
    ...(parsed.strategy === undefined ? {} : { strategy: parsed.strategy }),
    ...(parsed.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: parsed.connectTimeoutMs }),
  }
}

/** host, port, user, password and database as both mysql2 and node-postgres name them. */
export function connectionOptions(checked: SingleHostUrl, database: string | undefined): Record<string, unknown> {
  const { server, username, password } = checked
  return {
    host: server.host,
    port: server.port,
    ...(username === undefined || username === '' ? {} : { user: username }),
    ...(password === undefined ? {} : { password }),
    ...(database === undefined ? {} : { database }),
  }
}
