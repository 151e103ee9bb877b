/**
 * A private redis-server child process on a free loopback port, for tests that stop and restart Redis or
 * count its commands: the shared server on 6379 is never stopped or polluted by them.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A redis-server the test controls. */
export interface RedisServerProcess {
  readonly port: number
  readonly url: string
  /** Starts the server (again) on the same port and resolves once it accepts connections. */
  start(): Promise<void>
  /** Stops the server (SIGTERM, nothing saved) and resolves once it has exited. */
  stop(): Promise<void>
  /** Stops the server and removes its directory. */
  dispose(): Promise<void>
}

/**
 * The ports tried: LATCHKEY_PRIVATE_PORTS=<from>-<to> (inclusive) keeps the servers of one user of a shared machine
 * within a range of its own; default 20000-29999.
 */
function portRange(): { from: number; size: number } {
  const m = /^(\d+)-(\d+)$/.exec(process.env.LATCHKEY_PRIVATE_PORTS ?? '')
  if (m === null) return { from: 20_000, size: 10_000 }
  const from = Number(m[1])
  return { from, size: Math.max(1, Number(m[2]) - from + 1) }
}

/**
 * A free port below the ephemeral range (32768+ on Linux): while the server is stopped, an ephemeral port
 * could be taken by another process's outgoing connection, or a client's reconnect could connect to itself.
 */
async function freePort(): Promise<number> {
  const { from, size } = portRange()
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = from + Math.floor(Math.random() * size)
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer()
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error(`no free port from ${from} to ${from + size - 1} for a private redis-server`)
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket()
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(500, () => done(false))
    socket.once('error', () => done(false))
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'))
    socket.once('data', (d) => done(d.toString().startsWith('+PONG')))
  })
}

/**
 * Creates (and starts) a private redis-server; `extraArgs` e.g. `['--cluster-enabled', 'yes']`. A cluster node
 * also listens on a bus port, by default its port + 10000, which from this range lands in the ephemeral one where
 * an outgoing connection may hold it (the server then exits at start): it gets a free port of the range instead.
 */
export async function startRedisServer(extraArgs: readonly string[] = []): Promise<RedisServerProcess> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-redis-'))
  let child: ChildProcess | undefined
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]
  if (extraArgs.includes('--cluster-enabled')) {
    let bus = await freePort()
    while (bus === port) bus = await freePort()
    args.push('--cluster-port', String(bus))
  }
  const server: RedisServerProcess = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      if (child !== undefined) return
      const proc = spawn('redis-server', [...args, ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] })
      child = proc
      // The server's last words, for the error when it does not come up.
      let log = ''
      const keep = (chunk: Buffer) => {
        log = (log + chunk.toString()).slice(-1_000)
      }
      proc.stdout.on('data', keep)
      proc.stderr.on('data', keep)
      proc.once('exit', () => {
        if (child === proc) child = undefined
      })
      const deadline = Date.now() + 10_000
      while (!(await answers(port))) {
        if (Date.now() > deadline || child !== proc) {
          throw new Error(`redis-server did not start on port ${port}${log ? `; it said: ${log.trim()}` : ''}`)
        }
        await new Promise((r) => setTimeout(r, 50))
      }
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
