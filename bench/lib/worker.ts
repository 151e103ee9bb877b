/**
 * A bench worker process (forked by {@link WorkerPool}): opens one contender at a time and runs the cells
 * the parent sends, answering each request with its result. Run with --expose-gc for the heap figures.
 */
import { countClientCommands } from './client-commands.js'
import { type Contender, type ContenderSpec, openContender } from './contender.js'
import { contended, uncontended, type Window } from './modes.js'
import { cycles, drain, holdMany } from './scale-modes.js'
import { keepNonFinite } from './stats.js'

/** What the parent asks of a worker. */
export type WorkerRequest =
  | { op: 'open'; spec: ContenderSpec }
  | { op: 'close' }
  | ({ op: 'uncontended'; concurrency: number; keyPrefix: string } & Window)
  | ({
      op: 'contended'
      waiters: number
      firstId: number
      key: string
      measureFrom: number
      holdMs: number
      thinkMs: number
    } & Window)
  | {
      op: 'drain'
      waiters: number
      firstId: number
      key: string
      startAt: number
      gateAt: number
      gate: boolean
      waitMs: number
    }
  | { op: 'cycles'; total: number; concurrency: number; keyPrefix: string; probeUrl?: string }
  | { op: 'hold-many'; count: number; batch: number; holdMs: number; keyPrefix: string; probeUrl?: string }

/** A request on the wire. */
export interface Envelope {
  readonly id: number
  readonly request: WorkerRequest
}

/** A worker's answer. */
export type Reply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string }

let open: Contender | undefined

function opened(): Contender {
  if (open === undefined) throw new Error('no contender open in this worker')
  return open
}

async function handle(r: WorkerRequest): Promise<unknown> {
  switch (r.op) {
    case 'open':
      if (open !== undefined) await open.close()
      open = undefined
      open = await openContender(r.spec)
      // Warm-up outside any window: scripts loaded, connections and channels open, JIT warm.
      for (let i = 0; i < 20; i++) await (await open.acquire(`warm-${process.pid}`, 10_000))?.release()
      return null
    case 'close': {
      const c = open
      open = undefined
      await c?.close()
      return null
    }
    case 'uncontended':
      return uncontended(opened(), r.concurrency, r.keyPrefix, r)
    case 'contended':
      return contended(opened(), r.waiters, r.firstId, r.key, r)
    case 'drain':
      return drain(opened(), r)
    case 'cycles':
      return cycles(opened(), r)
    case 'hold-many':
      return holdMany(opened(), r)
  }
}

countClientCommands()
process.on('message', (m: Envelope) => {
  handle(m.request).then(
    // NaN and Infinity survive the JSON of the IPC channel as strings (restored by the pool).
    (result) =>
      process.send?.({ id: m.id, ok: true, result: JSON.parse(JSON.stringify(result, keepNonFinite)) } satisfies Reply),
    (error: unknown) =>
      process.send?.({
        id: m.id,
        ok: false,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      } satisfies Reply),
  )
})
// The parent going away (Ctrl-C, crash) must not leave workers behind.
process.on('disconnect', () => process.exit(0))
process.send?.({ id: 0, ok: true, result: 'ready' } satisfies Reply)
