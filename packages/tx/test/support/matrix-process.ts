/** Starting the crash matrix's coordinator process (`matrix-coordinator.ts`) with a crash point armed. */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('./matrix-coordinator.ts', import.meta.url))
const PREFIX = 'latchkey-tx crash-point '

/** One run of a scenario in its own process. */
export interface MatrixRun {
  readonly storeUrl: string
  readonly ledgerPath: string
  readonly scenario: string
  readonly gid: string
  readonly leaseTtlMs?: number
  readonly timeoutMs?: number
}

/** A started process: the crash-point keys it printed so far, and its exit. */
export interface MatrixChild {
  readonly child: ChildProcess
  readonly points: string[]
  readonly lines: string[]
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Resolves with the key of the first crash point printed. */
  readonly reached: Promise<string>
}

/** Starts the process with `LATCHKEY_TX_CRASH_AT=crashAt` (a key, or `trace`). */
export function startMatrix(run: MatrixRun, crashAt: string, signal = 'SIGKILL'): MatrixChild {
  const args = [run.storeUrl, run.ledgerPath, run.scenario, run.gid, String(run.leaseTtlMs ?? 600)]
  if (run.timeoutMs !== undefined) args.push(String(run.timeoutMs))
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LATCHKEY_TX_CRASH_AT: crashAt, LATCHKEY_TX_CRASH_SIGNAL: signal },
  })
  const points: string[] = []
  const lines: string[] = []
  let onPoint: (key: string) => void = () => undefined
  const reached = new Promise<string>((resolve) => {
    onPoint = resolve
  })
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    lines.push(line)
    if (!line.startsWith(PREFIX)) return
    points.push(line.slice(PREFIX.length))
    onPoint(line.slice(PREFIX.length))
  })
  // 'close', not 'exit': 'exit' can come before the last line of stdout is read (Node emits it as soon as the
  // process is gone, its pipes possibly unread), and a process that printed its crash point and killed itself
  // then looked as if it had never reached it. 'close' comes after stdout ended, so after every 'line'.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, sig) => resolve({ code, signal: sig })),
  )
  return { child, points, lines, exited, reached }
}

/** Runs the scenario uninterrupted and returns every crash point it passed, in order. */
export async function tracePoints(run: MatrixRun): Promise<string[]> {
  const started = startMatrix({ ...run, leaseTtlMs: run.leaseTtlMs ?? 10_000 }, 'trace')
  const { code } = await started.exited
  if (code !== 0) throw new Error(`trace of ${run.scenario} exited with ${code}: ${started.lines.join(' | ')}`)
  return started.points
}

/** Runs the scenario until the point `key`, where the process SIGKILLs itself; rejects if it never got there. */
export async function crashAtPoint(run: MatrixRun, key: string): Promise<void> {
  const started = startMatrix(run, key)
  const timer = setTimeout(() => started.child.kill('SIGKILL'), 30_000)
  const { code, signal } = await started.exited
  clearTimeout(timer)
  if (signal !== 'SIGKILL' || started.points[0] !== key) {
    throw new Error(`${run.scenario} did not stop at "${key}" (exit ${code ?? signal}): ${started.lines.join(' | ')}`)
  }
}
