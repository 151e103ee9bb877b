import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import type { SuiteEnv } from './env.js'
import { runNodeProcess } from './node-process.js'
import type { Section, WorkerTask } from './worker.js'

const here = fileURLToPath(import.meta.url)
const ext = here.endsWith('.ts') ? '.ts' : '.js'
const workerPath = join(dirname(here), `worker${ext}`)

/** Runs one worker process; resolves with its sections once it has exited by itself. */
export async function runWorker(task: WorkerTask, exitWithinMs: number): Promise<Section[]> {
  const needsTsx = workerPath.endsWith('.ts') || task.module.endsWith('.ts')
  const args = [...(needsTsx ? ['--import', 'tsx'] : []), workerPath, JSON.stringify(task)]
  const { code, out, err } = await runNodeProcess(args, exitWithinMs, 'the worker')
  if (code !== 0) throw new Error(`worker exited with ${code}: ${err}`)
  return JSON.parse(out.trim().split('\n').pop() ?? '[]') as Section[]
}

/**
 * Mutual exclusion across OS processes, plus the exit (no leaked handles) check. Each worker of the cross-process
 * case must exit by itself (`runWorker`), after waiting and being woken across processes: that is the exit check
 * too, so a backend that runs it does not start a fifth process for a separate one (a process start costs 1-2 s
 * of CPU, most of the case's time); a backend that works in one process only gets the separate check.
 */
export function processCases(env: SuiteEnv): void {
  const spec = env.options.processBackend
  const crossProcess = env.capabilities().crossProcess
  it.skipIf(spec === undefined || !crossProcess)(
    'mutual exclusion across 4 OS processes x 13 acquirers: the file counter ends exact, tokens follow the order, no overlap; each process exits by itself (no leaked handles or timers)',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'latchkey-conf-'))
      const counterFile = join(dir, 'counter')
      await writeFile(counterFile, '0')
      try {
        const task = (): WorkerTask => ({
          module: spec?.module ?? '',
          export: spec?.export ?? 'createBackend',
          namespace: env.namespace,
          lock: 'processes-shared',
          acquirers: 13,
          iterations: 2,
          counterFile,
          holdMs: 2,
          ttlMs: env.ms(10_000),
        })
        const results = await Promise.all([0, 1, 2, 3].map(() => runWorker(task(), 90_000)))
        const sections = results.flat()
        expect(sections).toHaveLength(4 * 13 * 2)
        expect(Number(await readFile(counterFile, 'utf8'))).toBe(4 * 13 * 2)
        expect(new Set(sections.map((s) => s.pid)).size).toBe(4)
        const byStart = [...sections].sort((a, b) => a.start - b.start)
        for (let i = 1; i < byStart.length; i++) {
          const prev = byStart[i - 1] as Section
          const cur = byStart[i] as Section
          // Sections never overlap (timestamps from Date.now(), shared by all processes; a section lasts >= 2 ms)...
          expect(cur.start).toBeGreaterThanOrEqual(prev.end)
          // ...and a later holder always has a higher token.
          if (env.capabilities().fencing === 'native') expect(BigInt(cur.token) > BigInt(prev.token)).toBe(true)
        }
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
    120_000,
  )

  if (crossProcess && spec !== undefined) return
  it.skipIf(spec === undefined)(
    'a process that used and closed latchkey exits by itself (no leaked handles or timers)',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'latchkey-exit-'))
      const counterFile = join(dir, 'counter')
      await writeFile(counterFile, '0')
      try {
        const sections = await runWorker(
          {
            module: spec?.module ?? '',
            export: spec?.export ?? 'createBackend',
            namespace: env.namespace,
            lock: 'exit-check',
            acquirers: 3,
            iterations: 2,
            counterFile,
            holdMs: 1,
            ttlMs: env.ms(3_000),
          },
          30_000,
        )
        expect(sections).toHaveLength(6)
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
    60_000,
  )
}
