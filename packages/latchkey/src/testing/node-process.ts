import { spawn } from 'node:child_process'

/** What a child process printed, and how it exited. */
export interface ProcessOutput {
  readonly code: number | null
  readonly out: string
  readonly err: string
}

/**
 * Runs `node <args>` and resolves with its output once it has exited by itself. A process still running after
 * `exitWithinMs` is killed and the promise rejects: something it opened (a socket, a timer) kept it alive, which
 * is what the tests that use this check for. `what` names the process in that error.
 *
 * @example
 * const { code, out } = await runNodeProcess(['worker.js', JSON.stringify(task)], 15_000, 'the worker')
 */
export function runNodeProcess(args: readonly string[], exitWithinMs: number, what: string): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d
    })
    child.stderr.on('data', (d: Buffer) => {
      err += d
    })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`${what} did not exit by itself within ${exitWithinMs} ms (leaked handle?); output: ${out}${err}`),
      )
    }, exitWithinMs)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, out, err })
    })
  })
}
