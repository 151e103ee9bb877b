/**
 * A private redis-server child process on a free loopback port, for tests that stop Redis mid-request or run it
 * with a password: the shared server on 6379 is never stopped or reconfigured by them. The app's copy of
 * latchkey's test support (packages/latchkey/test/support/redis-server-process.ts), which the app cannot import
 * (outside its rootDir), plus `requirepass`.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually } from 'latchkey/testing'

/** A redis-server the test controls. */
export interface RedisServerProcess {
  readonly port: number
  /** `redis://127.0.0.1:<port>`, with `:<password>@` when the server has one. */
  readonly url: string
  /** Starts the server (again) on the same port and resolves once it answers PING. */
  start(): Promise<void>
  /** Stops the server (SIGTERM, nothing saved) and resolves once it has exited. */
  stop(): Promise<void>
  /** Stops the server and removes its directory. */
  dispose(): Promise<void>
}

/**
 * A free port below the ephemeral range (32768+ on Linux): while the server is stopped, an ephemeral port could
 * be taken by another process's outgoing connection, or a client's reconnect could connect to itself.
 */
async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000)
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer()
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error('no free port between 20000 and 30000 for a private redis-server')
}

function answers(port: number, password: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket()
    let received = ''
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(500, () => done(false))
    socket.once('error', () => done(false))
    socket.connect(port, '127.0.0.1', () =>
      socket.write(`${password === undefined ? '' : `AUTH ${password}\r\n`}PING\r\n`),
    )
    socket.on('data', (d) => {
      received += d.toString()
      if (received.includes('+PONG')) done(true)
      else if (received.includes('-')) done(false)
    })
  })
}

/** Creates and starts a private redis-server, with `requirepass` when `password` is given. */
export async function startRedisServer(options: { password?: string } = {}): Promise<RedisServerProcess> {
  const { password } = options
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'flash-sale-redis-'))
  let child: ChildProcess | undefined
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]
  // On stdin, not argv: the password must not show in `ps` (a test checks that nothing else shows it).
  const config = password === undefined ? '' : `requirepass ${password}\n`
  const server: RedisServerProcess = {
    port,
    url: `redis://${password === undefined ? '' : `:${password}@`}127.0.0.1:${port}`,
    async start() {
      if (child !== undefined) return
      const proc = spawn('redis-server', ['-', ...args], { stdio: ['pipe', 'ignore', 'ignore'] })
      proc.stdin?.end(config)
      child = proc
      proc.once('exit', () => {
        if (child === proc) child = undefined
      })
      const ready = async (): Promise<boolean> => {
        if (child !== proc) throw new Error(`redis-server exited before it answered on port ${port}`)
        return answers(port, password)
      }
      await eventually(`redis-server answers on port ${port}`, ready, 10_000, 50)
    },
    async stop() {
      const proc = child
      if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
      proc.kill('SIGTERM')
      await exited
    },
    async dispose() {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  await server.start()
  return server
}
