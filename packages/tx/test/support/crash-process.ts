/** Starting and killing the crash test's coordinator process (`crash-coordinator.ts`). */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('./crash-coordinator.ts', import.meta.url))

/** What the coordinator process runs and where it stops. */
export interface CrashRun {
  readonly storeUrl: string
  readonly ledgerPath: string
  /** `step:op` (after the effect) or `step:op:before`. */
  readonly crashAt: string
  readonly gid: string
  /** The step whose forward operation fails, or `-`. */
  readonly failAt: string
  readonly kind?: 'saga' | 'tcc'
}

/** Starts the coordinator process and resolves once it printed `crash-point`. */
export function runUntilCrashPoint(run: CrashRun): Promise<ChildProcess> {
  const args = [run.storeUrl, run.ledgerPath, run.crashAt, run.gid, run.failAt, run.kind ?? 'saga']
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the coordinator process never reached its crash point')), 20_000)
    child.on('exit', (code) => reject(new Error(`the coordinator process exited early with ${code}`)))
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line !== 'crash-point') return
      clearTimeout(timer)
      resolve(child)
    })
  })
}

/** SIGKILL, and wait until the process is gone. */
export async function kill(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit')
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}
