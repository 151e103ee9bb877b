// One contending process: several concurrent tasks take the same SQLite-backed lock and increment a counter file.
import { readFile, writeFile } from 'node:fs/promises'
import { createLocks } from 'latchkey'
import { sqliteBackend } from 'latchkey/sqlite'

const { dbPath, counterFile, tasks, rounds, holdMs } = JSON.parse(process.argv[2])
const backend = sqliteBackend({ path: dbPath })
const locks = createLocks({ backend, namespace: 'demo', ttlMs: 5_000 })
const lock = locks.mutex('counter')
const now = () => performance.timeOrigin + performance.now()
const sections = []

await Promise.all(
  Array.from({ length: tasks }, async () => {
    for (let i = 0; i < rounds; i++) {
      await lock.withLock(async (lease) => {
        const start = now()
        const value = Number(await readFile(counterFile, 'utf8'))
        await new Promise((resolve) => setTimeout(resolve, holdMs))
        await writeFile(counterFile, String(value + 1))
        sections.push({ pid: process.pid, token: lease.token.toString(), start, end: now() })
      })
    }
  }),
)
await locks.close()
await backend.close()
process.send?.(sections)
