import { createRequire } from 'node:module'

/**
 * latchkey's version, as instrumentation scopes report it. Read from package.json, two folders up from both
 * `src/<folder>/` and `dist/<folder>/`; only the modules that name their tracer or meter load this.
 */
export const PACKAGE_VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string })
  .version
