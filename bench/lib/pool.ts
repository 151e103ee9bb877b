/**
 * Parent side of the bench workers: a few long-lived child processes (forked once, so each cell pays no
 * start-up), each running one request at a time. A worker that dies is replaced before the next cell, and
 * a cell that hangs can restart them all, so one bad cell cannot take the rest of the run with it.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { restoreNonFinite } from './stats.js'
import type { Envelope, Reply, WorkerRequest } from './worker.js'

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url))

interface Pending {
  readonly child: ChildProcess
  resolve(v: unknown): void
  reject(e: Error): void
}

/** A set of worker processes. */
export class WorkerPool {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly children: ChildProcess[] = []

  private constructor(readonly size: number) {}

  /** Forks `size` workers and waits until each is ready. */
  static async start(size: number): Promise<WorkerPool> {
    const pool = new WorkerPool(size)
    await pool.heal()
    return pool
  }

  private async spawn(i: number): Promise<void> {
    const child = fork(WORKER, [], {
      // BENCH_WORKER_ARGS: more Node flags for the workers, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (not allowed
      // in NODE_OPTIONS) to profile the contenders.
      execArgv: [
        '--expose-gc',
        '--import',
        'tsx',
        ...(process.env.BENCH_WORKER_ARGS?.split(' ').filter(Boolean) ?? []),
      ],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    this.children[i] = child
    child.on('exit', (code, signal) => {
      for (const [id, p] of this.pending) {
        if (p.child !== child) continue
        this.pending.delete(id)
        p.reject(new Error(`bench worker exited (${code ?? signal}) during a request`))
      }
    })
    await new Promise((resolve) => child.once('message', resolve))
    child.on('message', (m: Reply) => this.settle(m))
  }

  /** Replaces every worker that is not running. */
  async heal(): Promise<void> {
    const dead = Array.from({ length: this.size }, (_, i) => i).filter((i) => {
      const c = this.children[i]
      return c === undefined || c.exitCode !== null || c.signalCode !== null
    })
    await Promise.all(dead.map((i) => this.spawn(i)))
  }

  /** Kills every worker (a hung cell) and starts fresh ones. */
  async restart(): Promise<void> {
    await Promise.all(this.children.map((c) => stop(c, 0)))
    await this.heal()
  }

  /** Sends `request` to worker `i`; resolves with its result, rejects with its error. */
  request<T>(i: number, request: WorkerRequest): Promise<T> {
    const child = this.children[i]
    if (child === undefined) throw new RangeError(`no worker ${i}`)
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { child, resolve: resolve as (v: unknown) => void, reject })
      child.send({ id, request } satisfies Envelope)
    })
  }

  /**
   * Workers `offset`..`offset + size - 1` seen as a pool of their own (worker 0 of the view is `offset`), so that
   * cells can run side by side on disjoint workers. Healing and closing stay with the whole pool.
   */
  slice(offset: number, size: number): WorkerPool {
    const view = Object.create(this) as WorkerPool
    Object.defineProperty(view, 'size', { value: size })
    view.request = <T>(i: number, request: WorkerRequest) => this.request<T>(offset + i, request)
    return view
  }

  /** The same kind of request to workers 0..n-1, built per worker; all settle before this settles. */
  async all<T>(n: number, build: (i: number) => WorkerRequest): Promise<T[]> {
    const settled = await Promise.allSettled(Array.from({ length: n }, (_, i) => this.request<T>(i, build(i))))
    const failed = settled.find((s) => s.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    return settled.map((s) => (s as PromiseFulfilledResult<T>).value)
  }

  private settle(m: Reply): void {
    const p = this.pending.get(m.id)
    if (p === undefined) return
    this.pending.delete(m.id)
    if (m.ok) p.resolve(JSON.parse(JSON.stringify(m.result), restoreNonFinite))
    else p.reject(new Error(m.error))
  }

  /** Ends every worker (disconnecting makes each exit; SIGKILL after 5 s). */
  async close(): Promise<void> {
    await Promise.all(this.children.map((c) => stop(c, 5_000)))
  }
}

async function stop(c: ChildProcess, graceMs: number): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return
  const exited = new Promise((resolve) => c.once('exit', resolve))
  if (graceMs > 0 && c.connected) c.disconnect()
  const timer = setTimeout(() => c.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}
