import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { createConnection } from 'node:net'
import { sleep } from '../lib/clock.js'

/** A private redis-server the lab owns (never the shared one on 6379): its own port and data dir. */
export interface PrivateRedis {
  url: string
  port: number
  /** SIGKILL, then a fresh redis-server on the same port and data dir after `downMs` (with `args` instead, if given). */
  restart(downMs: number, args?: string[]): Promise<void>
  /** SIGKILL (a crash; nothing is flushed). */
  kill(): Promise<void>
  /** Starts the server again after a kill, with `args` instead of the first ones if given. */
  relaunch(args?: string[]): Promise<void>
  /** SIGSTOP, then SIGCONT after `ms` (keys expire by wall time, so the pause does not stop their clocks). */
  pause(ms: number): Promise<void>
  stop(): Promise<void>
}

/**
 * Starts redis-server on `port` with `dir` as its data dir; `persistence` picks the AOF policy. `env` is added to
 * the server's environment (a fake clock), `args` to its command line (`--replicaof`); `afterKill` runs between
 * the kill and the new start of a restart (T13 cuts the power of its disk there).
 */
export async function startPrivateRedis(
  port: number,
  dir: string,
  persistence: 'none' | 'always' | 'everysec' = 'none',
  options: { env?: Record<string, string>; args?: string[]; afterKill?: () => void } = {},
): Promise<PrivateRedis> {
  mkdirSync(dir, { recursive: true })
  const aof = persistence === 'none' ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', persistence]
  let extra = options.args ?? []
  const launch = async (): Promise<ChildProcess> => {
    const child = spawn(
      'redis-server',
      ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--dir', dir, ...aof, ...extra],
      { stdio: 'ignore', env: { ...process.env, ...options.env } },
    )
    await waitForPort(port, 10_000)
    return child
  }
  const kill = async (child: ChildProcess): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }
  let child = await launch()
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    restart: async (downMs, args) => {
      await kill(child)
      options.afterKill?.()
      if (args !== undefined) extra = args
      await sleep(downMs)
      child = await launch()
    },
    kill: () => kill(child),
    relaunch: async (args) => {
      if (args !== undefined) extra = args
      child = await launch()
    },
    pause: async (ms) => {
      child.kill('SIGSTOP')
      await sleep(ms)
      child.kill('SIGCONT')
    },
    stop: () => kill(child),
  }
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`. */
export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (up) return
    await sleep(100)
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`)
}
