import { createRequire } from 'node:module'
import { BackendUnavailableError } from '../errors.js'

const require = createRequire(import.meta.url)

/**
 * Loads a client library that latchkey lists as an optional peer dependency, or throws a
 * `BackendUnavailableError` that names the package to install.
 *
 * @example
 * const pg = requirePeer<PgModule>('pg', 'postgres', 'pg (8.x): npm install pg')
 */
export function requirePeer<T>(specifier: string, backend: string, install: string): T {
  try {
    return require(specifier) as T
  } catch (error) {
    throw new BackendUnavailableError(`${backend} backend needs the ${install}`, { cause: error })
  }
}
