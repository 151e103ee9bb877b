import { checkId } from '../branch.js'
import { mysqlXaResource } from './mysql-xa.js'
import { postgresXaResource } from './postgres-xa.js'
import type { MysqlXaPool, PgXaPool, XaPool, XaResource } from './resource.js'

const adapters = new WeakMap<object, XaResource>()

/** Whether `value` looks like a pool an XA branch can use (mysql2/promise or pg). */
export function isXaPool(value: unknown): value is XaPool {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  return typeof v.getConnection === 'function' || typeof v.connect === 'function'
}

/** Checks `resources` before any I/O: a name → mysql2/promise pool or pg Pool map. */
export function checkXaResources(resources: unknown): Record<string, XaPool> {
  if (resources === undefined) return {}
  if (typeof resources !== 'object' || resources === null) {
    throw new TypeError(`latchkey-tx: resources must be an object { name: pool }, received ${String(resources)}`)
  }
  for (const [name, pool] of Object.entries(resources)) {
    checkId('resource name', name)
    if (!isXaPool(pool)) {
      throw new TypeError(`latchkey-tx: resources.${name} must be a mysql2/promise pool or a pg Pool`)
    }
  }
  return resources as Record<string, XaPool>
}

/** The XA adapter of a pool (one per pool object, so its capability check and identity are learned once). */
export function xaResourceOf(pool: XaPool): XaResource {
  let adapter = adapters.get(pool)
  if (adapter === undefined) {
    // mysql2's pools have getConnection(); pg's have connect().
    adapter =
      typeof (pool as MysqlXaPool).getConnection === 'function'
        ? mysqlXaResource(pool as MysqlXaPool)
        : postgresXaResource(pool as PgXaPool)
    adapters.set(pool, adapter)
  }
  return adapter
}

/**
 * The XA resources a coordinator knows: those named in its options, and every pool a branch of this process
 * used. Recovery finds the database of a logged branch here by its identity.
 */
export class XaResources {
  private readonly named = new Map<string, XaResource>()
  private readonly all = new Set<XaResource>()

  constructor(resources: Readonly<Record<string, XaPool>>) {
    for (const [name, pool] of Object.entries(resources)) {
      const r = xaResourceOf(pool)
      this.named.set(name, r)
      this.all.add(r)
    }
  }

  /** The resource of a branch: a registered name or a pool (remembered for recovery). */
  resolve(resource: string | XaPool): XaResource {
    if (typeof resource === 'string') {
      const r = this.named.get(resource)
      if (r === undefined) {
        throw new RangeError(
          `latchkey-tx: no XA resource named "${resource}"; register it in createCoordinator({ resources: { ${resource}: pool } }) or pass the pool`,
        )
      }
      return r
    }
    const r = xaResourceOf(resource)
    this.all.add(r)
    return r
  }

  /** Every known resource. */
  list(): XaResource[] {
    return [...this.all]
  }

  /** The known resource with this identity; undefined when none (or none can be reached to learn it). */
  async byIdentity(identity: string): Promise<XaResource | undefined> {
    for (const r of this.all) {
      if ((await r.identity().catch(() => undefined)) === identity) return r
    }
    return undefined
  }
}
