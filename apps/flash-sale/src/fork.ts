import { type ChildProcess, fork } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** The app's root folder (holds package.json). */
export const APP_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')

/** tsx's loader as a file URL, so children find it whatever their working directory. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

/**
 * Forks `src/<entry>` as a child process with an IPC channel, in this process's working directory (relative
 * store and lock paths mean the same to both). TypeScript entries run through tsx: no build step. `nodeFlags`
 * go to Node itself (e.g. `--cpu-prof`). `args` are visible to every user of the machine (`ps`): anything secret goes over IPC (`child.send`).
 *
 * @example
 * const child = forkEntry('load/buyer-worker.ts', [])
 * child.send(job)
 */
export function forkEntry(entry: string, args: readonly string[], nodeFlags: readonly string[] = []): ChildProcess {
  const file = join(APP_DIR, 'src', entry)
  return fork(file, [...args], {
    execArgv: [...(file.endsWith('.ts') ? ['--import', TSX_LOADER] : []), ...nodeFlags],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  })
}

/** Resolves with the first IPC message of `child` that `accept` returns a value for; rejects if it exits first. */
export function nextMessage<T>(
  child: ChildProcess,
  accept: (message: unknown) => T | undefined,
  timeoutMs = 30_000,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => done(new Error(`child ${child.pid} sent nothing useful in ${timeoutMs} ms`)),
      timeoutMs,
    )
    const onMessage = (message: unknown): void => {
      const value = accept(message)
      if (value !== undefined) done(undefined, value)
    }
    const onExit = (code: number | null, signal: string | null): void =>
      done(new Error(`child ${child.pid} exited (code ${code}, signal ${signal}) before it was ready`))
    const done = (error: Error | undefined, value?: T): void => {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
      if (error !== undefined) reject(error)
      else resolve(value as T)
    }
    child.on('message', onMessage)
    child.on('exit', onExit)
  })
}

/** Resolves when `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}
