/**
 * A child process of the conformance suite: builds the backend from a module, runs `acquirers` concurrent
 * loops that each increment a counter file `iterations` times under one lock, prints what it saw as JSON,
 * and then must exit by itself (proof that latchkey leaves no handle open).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { pathToFileURL } from 'node:url'
import type { Backend } from '../backend/types.js'
import { createLocks } from '../core/locks.js'

/** What the parent passes as argv[2]. */
export interface WorkerTask {
  module: string
  export: string
  namespace: string
  lock: string
  acquirers: number
  iterations: number
  counterFile: string
  holdMs: number
  ttlMs: number
}

/** One critical section as seen by a child. */
export interface Section {
  token: string
  start: number
  end: number
  pid: number
}

// Date.now(): the one clock all processes share exactly (performance.timeOrigin can differ by ms between them).
const wall = (): number => Date.now()

async function main(): Promise<void> {
  const task = JSON.parse(process.argv[2] ?? '{}') as WorkerTask
  const url = task.module.startsWith('file:') ? task.module : pathToFileURL(task.module).href
  const mod = (await import(url)) as Record<string, () => Backend | Promise<Backend>>
  const factory = mod[task.export]
  if (typeof factory !== 'function') throw new Error(`${task.module} has no export ${task.export}`)
  const backend = await factory()
  const locks = createLocks({ backend, namespace: task.namespace, ttlMs: task.ttlMs })
  const lock = locks.mutex(task.lock)
  const sections: Section[] = []
  await Promise.all(
    Array.from({ length: task.acquirers }, async () => {
      for (let i = 0; i < task.iterations; i++) {
        await lock.withLock(async (lease) => {
          const start = wall()
          const value = Number(await readFile(task.counterFile, 'utf8'))
          await new Promise((resolve) => setTimeout(resolve, task.holdMs))
          await writeFile(task.counterFile, String(value + 1))
          sections.push({ token: lease.token.toString(), start, end: wall(), pid: process.pid })
        })
      }
    }),
  )
  await locks.close()
  await backend.close()
  process.stdout.write(`${JSON.stringify(sections)}\n`)
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exitCode = 1
})
