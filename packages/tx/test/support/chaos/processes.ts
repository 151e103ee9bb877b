/**
 * Child processes of the chaos test: started with tsx, ready once they print a given line, their other stdout
 * lines handed to a listener, SIGKILLed on demand or at cleanup (every one started is tracked).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

/** A started child: its process, and a way to wait for a line it prints. */
export interface Child {
  readonly process: ChildProcess
  /** Resolves with the first line (from now on) for which `match` returns true. */
  waitFor(match: (line: string) => boolean, timeoutMs?: number): Promise<string>
  /** Writes one line to its stdin. */
  send(line: string): void
}

const running = new Set<ChildProcess>()

/** Starts `script` (next to this file) with tsx; resolves once it printed a line starting with `readyPrefix`. */
export async function start(
  script: string,
  args: string[],
  readyPrefix: string,
  onLine: (line: string) => void = () => undefined,
): Promise<{ child: Child; ready: string }> {
  const path = fileURLToPath(new URL(`./${script}`, import.meta.url))
  const proc = spawn(process.execPath, ['--import', 'tsx', path, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  running.add(proc)
  proc.once('exit', () => running.delete(proc))
  proc.stdin?.on('error', () => undefined) // writes to a killed child
  const waiters = new Set<(line: string) => void>()
  createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    onLine(line)
    for (const w of [...waiters]) w(line)
  })
  const child: Child = {
    process: proc,
    send: (line) => void proc.stdin?.write(`${line}\n`),
    waitFor: (match, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`${script}: no expected line after ${timeoutMs} ms`)), timeoutMs)
        const onExit = (code: number | null) => done(new Error(`${script} exited (${code}) while waited for`))
        const waiter = (line: string) => {
          if (match(line)) done(undefined, line)
        }
        function done(error: Error | undefined, line?: string) {
          clearTimeout(timer)
          waiters.delete(waiter)
          proc.off('exit', onExit)
          if (error) reject(error)
          else resolve(line as string)
        }
        waiters.add(waiter)
        proc.once('exit', onExit)
      }),
  }
  const ready = await child.waitFor((line) => line.startsWith(readyPrefix))
  return { child, ready }
}

/** SIGKILL, and wait until the process is gone. */
export async function kill(child: Child): Promise<void> {
  const proc = child.process
  if (proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  proc.kill('SIGKILL')
  await exited
}

/** SIGKILLs every child still running (cleanup, also after a failure). */
export async function killAll(): Promise<void> {
  await Promise.all(
    [...running].map((proc) => {
      const exited = new Promise((resolve) => proc.once('exit', resolve))
      proc.kill('SIGKILL')
      return exited
    }),
  )
}
