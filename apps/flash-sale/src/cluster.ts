import type { ChildProcess } from 'node:child_process'
import { exited, forkEntry, nextMessage } from './fork.js'
import type { ServiceOptions } from './service.js'
import type { WorkerStart } from './service-worker.js'

/** Options of {@link startCluster}: the service options plus how many processes. */
export interface ClusterOptions extends Omit<ServiceOptions, 'port'> {
  /** Service processes. Default 2. */
  readonly workers?: number
  /** First port; worker i listens on basePort + i. Default 0 (each picks a free port). */
  readonly basePort?: number
  /** Exact port of each worker (overrides `workers` and `basePort`), e.g. to restart on the same ports. */
  readonly ports?: readonly number[]
  /** Options of worker `index` only, over the shared ones (e.g. a fault hook in one process). */
  readonly perWorker?: (index: number) => Partial<ServiceOptions>
  /**
   * Node flags of every service process, e.g. `['--cpu-prof', '--cpu-prof-dir=/tmp/prof']` to profile them
   * (Node refuses `--cpu-prof` in NODE_OPTIONS). The profile is written when the process exits (`close()`).
   */
  readonly nodeFlags?: readonly string[]
}

/** N service processes sharing one store and one lock backend. */
export interface Cluster {
  readonly urls: readonly string[]
  readonly children: readonly ChildProcess[]
  /** Stops every worker still alive (gracefully, then SIGKILL after 5 s). */
  close(): Promise<void>
}

/**
 * Starts `workers` service processes on consecutive ports (or free ports). Locks must be shared across
 * processes, so a `memory:` backend is refused with more than one worker.
 *
 * @example
 * const cluster = await startCluster({ workers: 3, storeUrl: 'sqlite:/tmp/s.db', backendUrl: 'sqlite:/tmp/l.db' })
 */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const workers = options.ports?.length ?? options.workers ?? 2
  if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`workers must be >= 1, received ${workers}`)
  if (workers > 1 && (options.backendUrl ?? '').startsWith('memory:')) {
    throw new RangeError('memory: locks live inside one process; with several workers use --backend sqlite:./locks.db')
  }
  const { workers: _w, basePort, ports, perWorker, nodeFlags, ...service } = options
  const children: ChildProcess[] = []
  const urls: string[] = []
  const close = async (): Promise<void> => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return
        if (child.connected) child.send({ type: 'shutdown' })
        else child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
        await exited(child)
        clearTimeout(timer)
      }),
    )
  }
  const launch = async (i: number): Promise<string> => {
    const port = ports?.[i] ?? (basePort === undefined || basePort === 0 ? 0 : basePort + i)
    // Over IPC, never in argv: the options hold store and backend URLs with their passwords and the admin
    // token, and any user of the machine can read a process's argv (`ps`).
    const child = forkEntry('service-worker.ts', [], nodeFlags)
    children[i] = child
    const start: WorkerStart = { type: 'start', options: { ...service, ...perWorker?.(i), port } }
    child.send(start)
    const ready = await nextMessage(child, (m) =>
      (m as { type?: string }).type === 'ready' ? (m as { url: string }) : undefined,
    )
    return ready.url
  }
  try {
    // The first worker creates the schemas alone, so the others never race on CREATE TABLE.
    urls.push(await launch(0))
    urls.push(...(await Promise.all(Array.from({ length: workers - 1 }, (_, i) => launch(i + 1)))))
  } catch (error) {
    await close()
    throw error
  }
  return { urls, children, close }
}
