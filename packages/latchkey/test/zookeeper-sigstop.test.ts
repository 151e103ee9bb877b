/**
 * A holder process paused (SIGSTOP) past its session timeout loses its lease; the next holder's token is
 * higher, and a fenced resource rejects the paused holder's late write (the pause of docs/background.md#fencing-tokens).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { zookeeperBackend } from '../src/backends/zookeeper/index.js'
import { createLocks } from '../src/core/locks.js'
import { StaleTokenError } from '../src/errors.js'
import { createFenceGuard } from '../src/fence/index.js'
import { cleanupNamespace, zkUrl } from './support/zookeeper-env.js'

const namespace = `lkz-${randomUUID().slice(0, 8)}`
const holderScript = fileURLToPath(new URL('./support/zookeeper-holder.ts', import.meta.url))
const backend = zookeeperBackend({ connectString: zkUrl(), sessionTimeoutMs: 6_000 })

afterAll(async () => {
  await backend.close()
  await cleanupNamespace(zkUrl(), namespace)
})

/** Spawns the holder and returns a function that resolves the next JSON event it prints. */
function startHolder(sessionMs: number): { child: ChildProcess; next: () => Promise<Record<string, unknown>> } {
  const child = spawn(process.execPath, ['--import', 'tsx', holderScript, namespace, 'paused', String(sessionMs)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const queue: Record<string, unknown>[] = []
  const waiting: ((e: Record<string, unknown>) => void)[] = []
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const event = JSON.parse(line) as Record<string, unknown>
    const w = waiting.shift()
    if (w) w(event)
    else queue.push(event)
  })
  const next = () =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const queued = queue.shift()
      if (queued) return resolve(queued)
      const timer = setTimeout(() => reject(new Error('holder process said nothing for 15 s')), 15_000)
      waiting.push((e) => {
        clearTimeout(timer)
        resolve(e)
      })
    })
  return { child, next }
}

it('a holder paused past its session timeout loses the lease, and its late write is rejected by the fence', async () => {
  const sessionMs = 2_000
  const guard = createFenceGuard()
  const { child, next } = startHolder(sessionMs)
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
  try {
    const acquired = await next()
    expect(acquired.event).toBe('acquired')
    const oldToken = BigInt(acquired.token as string)
    await guard.admit('paused', oldToken)
    child.kill('SIGSTOP')
    const locks = createLocks({ backend, namespace })
    // Only the server expiring the paused holder's session can free the lock.
    const lease = await locks.mutex('paused').acquire({ waitMs: 15_000 })
    expect(lease.token > oldToken).toBe(true)
    await guard.admit('paused', lease.token)
    child.kill('SIGCONT')
    child.stdin?.write('write\n')
    // On waking, timers and stdin race: collect both the late write and the loss, in whichever order.
    const seen: Record<string, Record<string, unknown>> = {}
    while (seen.write === undefined || seen.lost === undefined) {
      const event = await next()
      seen[event.event as string] = event
    }
    await expect(guard.admit('paused', BigInt(seen.write.token as string))).rejects.toBeInstanceOf(StaleTokenError)
    expect(seen.lost.reason).toBe('LockLostError')
    await lease.release()
    await locks.close()
    child.stdin?.write('exit\n')
    expect(await exited).toBe(0)
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
  }
}, 40_000)
