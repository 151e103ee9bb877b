/**
 * Where each contender's cells run: the Node worker pool for every JavaScript contender, one warm JVM per
 * ZooKeeper target for Apache Curator (curator-pool.ts), started on first use and quit at the end of the run.
 */

import type { CellPool } from './cells.js'
import type { ContenderDef } from './contender-defs.js'
import { CuratorPool } from './curator-pool.js'
import type { WorkerPool } from './pool.js'

export class ContenderPools {
  private readonly curators = new Map<string, CuratorPool>()

  constructor(
    readonly workers: WorkerPool,
    private readonly namespace: string,
  ) {}

  /** The pool that runs `def`'s cells. */
  for(def: ContenderDef): CellPool {
    if (def.curator === undefined) return this.workers
    let pool = this.curators.get(def.curator)
    if (pool === undefined) {
      // Its own base path per target: the JVM deletes it, with every lock node under it, when it quits.
      pool = new CuratorPool(def.curator, `/${this.namespace}-curator-${this.curators.size}`, this.workers.size)
      this.curators.set(def.curator, pool)
    }
    return pool
  }

  /** Quits the JVMs. */
  async close(): Promise<void> {
    await Promise.all([...this.curators.values()].map((p) => p.close()))
    this.curators.clear()
  }
}
