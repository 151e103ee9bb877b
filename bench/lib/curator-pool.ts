/**
 * Apache Curator's InterProcessMutex as a contender of the main matrix: a stand-in for the worker pool that
 * answers a cell's requests from one warm JVM per ZooKeeper target (curator-bench.ts) instead of from the Node
 * workers, so cells.ts measures Curator's cells exactly as it measures every other contender's (same windows,
 * same analysis of the intervals). The JVM spreads a cell's waiters over its own `size` ZooKeeper sessions, as
 * the Node contenders spread theirs over `size` worker processes.
 */
import type { CellPool } from './cells.js'
import { CuratorBench } from './curator-bench.js'
import type { ContendedResult } from './modes.js'
import type { WorkerRequest } from './worker.js'

type Contended = Extract<WorkerRequest, { op: 'contended' }>

const EMPTY: ContendedResult = { intervals: [], giveUps: 0, cpuMs: 0, clientCmds: 0 }

export class CuratorPool implements CellPool {
  private jvm: Promise<CuratorBench> | undefined

  /** `connect`: the ZooKeeper connect string; `basePath`: the JVM's lock nodes (deleted when it quits). */
  constructor(
    private readonly connect: string,
    private readonly basePath: string,
    readonly size: number,
  ) {}

  private bench(): Promise<CuratorBench> {
    this.jvm ??= CuratorBench.start(this.connect, this.basePath, this.size)
    return this.jvm
  }

  /** `open` starts (or reuses) the warm JVM; `close` keeps it for the next cell; a window goes to the JVM. */
  async request<T>(_worker: number, r: WorkerRequest): Promise<T> {
    const bench = await this.bench()
    if (r.op === 'open' || r.op === 'close') return undefined as T
    if (r.op === 'uncontended') return (await bench.uncontended(r.concurrency, r.startAt, r.endAt)) as T
    if (r.op === 'contended') return (await this.contended(bench, [r]))[0] as T
    throw new Error(`the Curator contender does not run '${r.op}'`)
  }

  /**
   * A contended cell's per-worker requests become one JVM call with all their waiters (its reply carries every
   * interval, the other parts are empty): the analysis only reads the union of the parts.
   */
  async all<T>(n: number, build: (i: number) => WorkerRequest): Promise<T[]> {
    const requests = Array.from({ length: n }, (_, i) => build(i))
    const bench = await this.bench()
    if (requests.every((r): r is Contended => r.op === 'contended'))
      return (await this.contended(bench, requests)) as T[]
    return Promise.all(requests.map((r, i) => this.request<T>(i, r)))
  }

  private async contended(bench: CuratorBench, parts: readonly Contended[]): Promise<ContendedResult[]> {
    const first = parts[0]
    if (first === undefined) return []
    const waiters = parts.reduce((s, p) => s + p.waiters, 0)
    const r = await bench.contended(waiters, first)
    return [r, ...parts.slice(1).map(() => EMPTY)]
  }

  /** Quits the JVM (which deletes its base path). */
  async close(): Promise<void> {
    const jvm = this.jvm
    this.jvm = undefined
    if (jvm !== undefined) await (await jvm.catch(() => undefined))?.close()
  }
}
