import { createRequire } from 'node:module'
import { UnsupportedError } from '../errors.js'

const require = createRequire(import.meta.url)

/**
 * Loads a client library that latchkey lists as an optional peer dependency, or throws an `UnsupportedError`
 * (`retryable: false`: trying again cannot install a package) that names the package and how to install it.
 *
 * @example
 * const pg = requirePeer<PgModule>('pg', 'postgres', 'pg (8.x): npm install pg')
 */
export function requirePeer<T>(specifier: string, backend: string, install: string): T {
  try {
    return require(specifier) as T
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code
    if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') {
      throw new UnsupportedError(`${backend} backend needs the ${install}`, { cause: error })
    }
    // Installed but broken (a native addon built for another Node, a syntax error): reinstalling is the fix.
    throw new UnsupportedError(
      `${backend} backend could not load ${specifier} (${(error as Error)?.message}); reinstall the ${install}`,
      { cause: error },
    )
  }
}
