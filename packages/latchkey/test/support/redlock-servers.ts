/**
 * Private redis-server processes for the RedLock fault tests (default ports 6481-6485, `LATCHKEY_REDLOCK_FAULT_PORTS`),
 * so the five shared nodes of scripts/servers/redlock.sh stay up. Each node can be killed (SIGKILL: a crash),
 * paused (SIGSTOP), resumed and restarted with or without an append-only file.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../../..')

/** Ports of the private nodes. */
export const FAULT_PORTS = (process.env.LATCHKEY_REDLOCK_FAULT_PORTS ?? '6481,6482,6483,6484,6485')
  .split(',')
  .map(Number)

/** How a node keeps its data across a restart. */
export type Persistence = 'none' | 'aof-always'

/** One private redis-server. */
export class FaultNode {
  readonly url: string
  private child: ChildProcess | undefined
  private readonly dir: string

  constructor(readonly port: number) {
    this.url = `redis://127.0.0.1:${port}`
    this.dir = join(ROOT, '.data', 'redlock-faults', String(port))
  }

  /** Starts the server (keeping its directory, so an AOF written before a crash is replayed). */
  async start(persistence: Persistence = 'none'): Promise<void> {
    if (this.child !== undefined) throw new Error(`node ${this.port} is already running`)
    // Never adopt (or later flush) a server someone else runs on the port.
    if (await ping(this.port))
      throw new Error(`port ${this.port} is already served by another process; set LATCHKEY_REDLOCK_FAULT_PORTS`)
    mkdirSync(this.dir, { recursive: true })
    const aof =
      persistence === 'aof-always' ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', ...aof, '--dir', this.dir]
    const child = spawn('redis-server', args, { stdio: 'ignore' })
    this.child = child
    child.once('exit', () => {
      if (this.child === child) this.child = undefined
    })
    await waitUntil(async () => {
      if (this.child !== child) throw new Error(`redis-server on port ${this.port} exited at start`)
      return ping(this.port)
    }, `redis-server on port ${this.port} did not start`)
  }

  /** SIGKILL, like a crash: nothing is saved beyond what the AOF already has. */
  async kill(): Promise<void> {
    const child = this.child
    if (child === undefined) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGCONT') // a paused process must run to die promptly
    child.kill('SIGKILL')
    await exited
  }

  get running(): boolean {
    return this.child !== undefined
  }

  pause(): void {
    this.child?.kill('SIGSTOP')
  }

  resume(): void {
    this.child?.kill('SIGCONT')
  }

  /** Kills the server and removes its data directory. */
  async dispose(): Promise<void> {
    await this.kill()
    rmSync(this.dir, { recursive: true, force: true })
  }

  /** Forgets the data directory (a fresh, empty node on the next start). */
  wipe(): void {
    rmSync(this.dir, { recursive: true, force: true })
  }
}

async function ping(port: number): Promise<boolean> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  })
  client.on('error', () => undefined)
  try {
    await client.connect()
    return (await client.ping()) === 'PONG'
  } catch {
    return false
  } finally {
    client.disconnect()
  }
}

/** Polls `check` every 20 ms until it is true, for at most `ms`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, message: string, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(message)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Removes the parent directory of the private nodes' data. */
export function removeFaultDataRoot(): void {
  rmSync(join(ROOT, '.data', 'redlock-faults'), { recursive: true, force: true })
}
