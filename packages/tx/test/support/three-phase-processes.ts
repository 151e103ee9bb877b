/** Starting and killing the 3PC tests' participant and coordinator processes; reading a participant's bank. */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'

const service = fileURLToPath(new URL('./three-phase-service.ts', import.meta.url))
const coordinator = fileURLToPath(new URL('./three-phase-coordinator.ts', import.meta.url))
const CRASH = 'latchkey-tx crash-point '

/** A running participant service. */
export interface ParticipantProcess {
  readonly dbPath: string
  readonly port: number
  readonly url: string
  /** SIGKILL, and wait until it is gone. */
  kill(): Promise<void>
}

/** Starts `three-phase-service.ts` and resolves once it listens (port 0: any free port). */
export function startParticipant(dbPath: string, timeoutMs: number, port = 0): Promise<ParticipantProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', service, dbPath, String(port), String(timeoutMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the participant process never listened')), 20_000)
    child.once('exit', (code) => reject(new Error(`the participant process exited early with ${code}`)))
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (!line.startsWith('listening ')) return
      clearTimeout(timer)
      const p = Number(line.slice('listening '.length))
      resolve({ dbPath, port: p, url: `http://127.0.0.1:${p}`, kill: () => kill(child) })
    })
  })
}

async function kill(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit')
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

/** What a participant's database holds: its account, its 3PC state per gid, its effects log. */
export function bankOf(dbPath: string, gid: string, tcc = false) {
  const db = new Database(tcc ? `${dbPath}-tcc` : dbPath, { readonly: true })
  try {
    const acct = db.prepare('SELECT bal, pending FROM acct WHERE id = 1').get() as { bal: number; pending: number }
    const effects = (
      db.prepare('SELECT op, by FROM effects WHERE gid = ? ORDER BY rowid').all(gid) as { op: string; by: string }[]
    ).map((e) => (e.by === 'coordinator' ? e.op : `${e.op} by ${e.by}`))
    const state = tcc
      ? undefined
      : (db.prepare('SELECT state, decided_by FROM latchkey_tx_3pc WHERE gid = ?').get(gid) as
          | { state: string; decided_by: string | null }
          | undefined)
    return {
      ...acct,
      effects,
      state: state === undefined ? undefined : `${state.state}${state.decided_by === 'timeout' ? ' by timeout' : ''}`,
    }
  } finally {
    db.close()
  }
}

/** One run of the coordinator process, which SIGKILLs itself at `crashAt`. */
export interface CoordinatorRun {
  readonly storeUrl: string
  readonly kind: '3pc' | 'tcc'
  readonly gid: string
  readonly urls: { readonly a: string; readonly b: string }
  readonly crashAt: string
  readonly input?: unknown
}

/** Runs the coordinator process to its end; `crashAt` is its `LATCHKEY_TX_CRASH_AT` (a key, or `trace`). */
async function runCoordinator(run: CoordinatorRun): Promise<{ signal: NodeJS.Signals | null; lines: string[] }> {
  const args = [coordinator, run.storeUrl, run.kind, run.gid, run.urls.a, run.urls.b]
  if (run.input !== undefined) args.push(JSON.stringify(run.input))
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LATCHKEY_TX_CRASH_AT: run.crashAt },
  })
  const lines: string[] = []
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => lines.push(line))
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  // 'close' (stdout read to its end), not 'exit', which can come before the crash point's line is read.
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('close', (_, sig) => resolve(sig)))
  clearTimeout(timer)
  return { signal, lines }
}

/** Runs the coordinator process until it kills itself at `crashAt`; rejects if it ends any other way. */
export async function crashCoordinator(run: CoordinatorRun): Promise<void> {
  const { signal, lines } = await runCoordinator(run)
  if (signal !== 'SIGKILL' || !lines.includes(`${CRASH}${run.crashAt}`)) {
    throw new Error(`the coordinator did not stop at "${run.crashAt}" (${signal}): ${lines.join(' | ')}`)
  }
}

/** Runs the coordinator process uninterrupted; resolves with every crash point it passed and its last line. */
export async function traceCoordinator(
  run: Omit<CoordinatorRun, 'crashAt'>,
): Promise<{ points: string[]; last: string }> {
  const { lines } = await runCoordinator({ ...run, crashAt: 'trace' })
  const points = lines.filter((l) => l.startsWith(CRASH)).map((l) => l.slice(CRASH.length))
  return { points, last: lines.at(-1) ?? '' }
}
