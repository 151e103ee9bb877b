/**
 * `latchkey-tx` (the CLI, from the sources through tsx) as a child process: `startServer` runs `serve` on a
 * random port and resolves once it listens; `runCli` runs an admin command to completion.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const CLI = fileURLToPath(new URL('../../src/cli/run.ts', import.meta.url))

export interface ServerProcess {
  readonly child: ChildProcess
  readonly base: string
  /** Output so far (stdout and stderr). */
  output(): string
  /** SIGKILL, and wait for the exit. */
  kill(): Promise<void>
  /** SIGTERM (a clean close), and wait for the exit code. */
  stop(): Promise<number | null>
}

/** Starts `latchkey-tx serve --store <store> --port 0 ...extra`. */
export async function startServer(store: string, extra: readonly string[] = []): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--store', store, '--port', '0', ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (c: Buffer) => {
    output += c.toString()
  })
  child.stderr?.on('data', (c: Buffer) => {
    output += c.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const port = await new Promise<number>((resolve, reject) => {
    const onData = () => {
      const m = /listening on port (\d+)/.exec(output)
      if (m?.[1] !== undefined) resolve(Number(m[1]))
    }
    child.stdout?.on('data', onData)
    void exited.then((code) => reject(new Error(`latchkey-tx serve exited with ${code} before listening:\n${output}`)))
  })
  return {
    child,
    base: `http://127.0.0.1:${port}`,
    output: () => output,
    kill: async () => {
      child.kill('SIGKILL')
      await exited
    },
    stop: async () => {
      child.kill('SIGTERM')
      return exited
    },
  }
}

/** The package's bin script, which runs the built CLI (`npm run build` first, as scripts/test.sh does). */
export const BIN = fileURLToPath(new URL('../../bin/latchkey-tx.js', import.meta.url))

/** Runs `latchkey-tx ...args` (from the sources, or through the bin with `{ bin: true }`); resolves with its exit code and output. */
export function runCli(
  args: readonly string[],
  options: { bin?: boolean } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const command = options.bin === true ? [BIN] : ['--import', 'tsx', CLI]
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString()
    })
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString()
    })
    child.once('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

/** A raw JSON request, as a DTM SDK sends it. */
export async function dtm(
  base: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}/api/dtmsvr/${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}
