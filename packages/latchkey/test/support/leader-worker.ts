/**
 * A participant of the multi-process leader-election test, run as `node --import tsx leader-worker.ts <task>`. It
 * builds the backend from a module, joins the election and prints one JSON line per event (`ready`, `elected`,
 * `revoked`, `overlap`, `closed`). While it leads, it writes its term's token to a referee (a Redis fence key) every
 * few ms: a write rejected because a higher token was admitted, while its own term is still on, is two leaders at
 * once (`overlap`). A `close` line on stdin closes everything; the process must then exit by itself.
 */
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { Redis } from 'ioredis'
import type { Backend } from '../../src/backend/types.js'
import type { LeaderTerm } from '../../src/core/leader-types.js'
import { createLocks } from '../../src/core/locks.js'
import { redisFenceStore } from '../../src/fence/redis-fence-store.js'

/** What the parent passes as argv[2]. */
export interface LeaderTask {
  module: string
  export: string
  namespace: string
  name: string
  id: string
  ttlMs: number
  redisUrl: string
  /** The referee's Redis key prefix. */
  fencePrefix: string
}

/** One line printed by a participant. `at` is Date.now(), the clock every process on the host shares. */
export interface LeaderLine {
  type: 'ready' | 'elected' | 'revoked' | 'overlap' | 'closed'
  id: string
  at: number
  token?: string
  reason?: string
  highest?: string
}

const task = JSON.parse(process.argv[2] ?? '{}') as LeaderTask
const say = (line: Omit<LeaderLine, 'id' | 'at'>): void => {
  process.stdout.write(`${JSON.stringify({ ...line, id: task.id, at: Date.now() })}\n`)
}

async function main(): Promise<void> {
  const url = task.module.startsWith('file:') ? task.module : pathToFileURL(task.module).href
  const mod = (await import(url)) as Record<string, () => Backend | Promise<Backend>>
  const factory = mod[task.export]
  if (typeof factory !== 'function') throw new Error(`${task.module} has no export ${task.export}`)
  const backend = await factory()
  const redis = new Redis(task.redisUrl)
  const referee = redisFenceStore({ client: redis, prefix: task.fencePrefix })
  const locks = createLocks({ backend, namespace: task.namespace, ttlMs: task.ttlMs })
  const leader = locks.leader(task.name, { id: task.id })
  const writes: Promise<void>[] = []

  /** The leader's work: write the token to the referee until the term ends. */
  const work = async (term: LeaderTerm): Promise<void> => {
    while (!term.signal.aborted) {
      const { admitted, highest } = await referee.admit('leader', term.token)
      // Checked after the answer: if the term is still on now, it was on when the referee had a higher token.
      if (!admitted && !term.signal.aborted) say({ type: 'overlap', token: `${term.token}`, highest: `${highest}` })
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  leader.on('elected', (term) => {
    say({ type: 'elected', token: `${term.token}` })
    writes.push(work(term))
  })
  leader.on('revoked', (r) => say({ type: 'revoked', token: `${r.token}`, reason: r.reason }))
  say({ type: 'ready' })

  const lines = createInterface({ input: process.stdin })
  for await (const line of lines) {
    if (line.trim() === 'close') break
  }
  lines.close()
  process.stdin.destroy()
  await leader.close()
  say({ type: 'closed' })
  await Promise.all(writes)
  await locks.close()
  await backend.close()
  await redis.quit()
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exitCode = 1
})
