/**
 * Embedded backends benchmark (memory, SQLite): uncontended acquire+release pairs/s at concurrency 1 and 50, and
 * contended handoff across OS processes. Run: npx tsx bench/embedded-locks.ts [--seconds 3]
 * Prints tables; asserts nothing (speed is measured, never asserted in tests).
 */
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { memoryBackend } from '../packages/latchkey/src/backends/memory/index.js'
import { sqliteBackend } from '../packages/latchkey/src/backends/sqlite/index.js'
import type { Backend } from '../packages/latchkey/src/index.js'
import { createLocks } from '../packages/latchkey/src/index.js'

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, child: { type: 'string' } } })
const seconds = Number(values.seconds)
const dir = values.child === undefined ? mkdtempSync(join(tmpdir(), 'latchkey-bench-')) : ''

/** Runs `concurrency` loops of acquire+release on distinct keys for `seconds`; returns pairs/s. */
async function uncontended(backend: Backend, concurrency: number): Promise<number> {
  const locks = createLocks({ backend, namespace: `u${concurrency}` })
  const until = performance.now() + seconds * 1000
  let pairs = 0
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const lock = locks.mutex(`k${i}`)
      while (performance.now() < until) {
        const lease = await lock.acquire()
        await lease.release()
        pairs++
      }
    }),
  )
  await locks.close()
  return pairs / seconds
}

/** Child: waits on one lock, records its acquisition times, holds 1 ms. */
async function child(spec: string): Promise<void> {
  const { path } = JSON.parse(spec) as { path: string }
  const backend = sqliteBackend({ path, synchronous: 'normal' })
  // Start together: the parent sends the deadline once every child has booted.
  const until = await new Promise<number>((resolve) => {
    process.once('message', (m) => resolve(m as number))
    process.send?.('ready')
  })
  const locks = createLocks({ backend, namespace: 'contended', maxPollMs: 20 })
  const acquired: Array<[number, number]> = []
  const lock = locks.mutex('hot')
  while (Date.now() < until) {
    const lease = await lock.acquire()
    const at = performance.timeOrigin + performance.now()
    await new Promise((r) => setTimeout(r, 1))
    acquired.push([at, performance.timeOrigin + performance.now()])
    await lease.release()
  }
  await locks.close()
  await backend.close()
  process.send?.(acquired)
}

async function contended(
  processes: number,
): Promise<{ perSecond: number; p50: number; p99: number; fairness: number }> {
  const path = join(dir, `contended-${processes}.db`)
  sqliteBackend({ path }).close()
  const script = fileURLToPath(import.meta.url)
  const children = Array.from({ length: processes }, () =>
    fork(script, ['--child', JSON.stringify({ path })], { execArgv: ['--import', 'tsx'] }),
  )
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))))
  const until = Date.now() + seconds * 1000
  const results = await Promise.all(
    children.map((c) => {
      const done = new Promise<Array<[number, number]>>((resolve) =>
        c.once('message', (m) => resolve(m as Array<[number, number]>)),
      )
      c.send(until)
      return done
    }),
  )
  const all = results.flat().sort((a, b) => a[0] - b[0])
  const gaps = all
    .slice(1)
    .map((s, i) => s[0] - (all[i] as [number, number])[1])
    .sort((a, b) => a - b)
  const counts = results.map((r) => r.length)
  const q = (p: number) => gaps[Math.min(gaps.length - 1, Math.floor(p * gaps.length))] ?? Number.NaN
  return {
    perSecond: all.length / seconds,
    p50: q(0.5),
    p99: q(0.99),
    fairness: Math.max(...counts) / Math.max(1, Math.min(...counts)),
  }
}

async function main(): Promise<void> {
  console.log(
    `latchkey embedded backends — ${cpus().length} x ${cpus()[0]?.model}, Node ${process.version}, ${new Date().toISOString()}`,
  )
  console.log(`\nUncontended acquire+release pairs/s (${seconds} s per cell)\n`)
  console.log('| backend | c=1 | c=50 |\n| --- | ---: | ---: |')
  const rows: Array<[string, () => Backend]> = [
    ['memory', () => memoryBackend()],
    ['sqlite (synchronous=FULL)', () => sqliteBackend({ path: join(dir, 'full.db'), synchronous: 'full' })],
    ['sqlite (synchronous=NORMAL, default)', () => sqliteBackend({ path: join(dir, 'normal.db') })],
  ]
  for (const [name, make] of rows) {
    const backend = make()
    const c1 = await uncontended(backend, 1)
    const c50 = await uncontended(backend, 50)
    await backend.close()
    console.log(`| ${name} | ${Math.round(c1).toLocaleString('en')} | ${Math.round(c50).toLocaleString('en')} |`)
  }
  console.log(`\nContended: one SQLite lock, N OS processes, hold 1 ms, synchronous=NORMAL, maxPollMs 20\n`)
  console.log(
    '| processes | acquisitions/s | handoff gap p50 ms | p99 ms | max/min per process |\n| ---: | ---: | ---: | ---: | ---: |',
  )
  for (const n of [2, 4, 8]) {
    const r = await contended(n)
    console.log(
      `| ${n} | ${Math.round(r.perSecond)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.fairness.toFixed(2)} |`,
    )
  }
  rmSync(dir, { recursive: true, force: true })
}

if (values.child !== undefined) await child(values.child)
else await main()
