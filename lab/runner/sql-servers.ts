import { type ChildProcess, execFile, type SpawnOptions, spawn } from 'node:child_process'
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { sleep } from '../lib/clock.js'
import { type LazyMount, mountLazyFs } from './lazy-fs.js'
import { waitForPort } from './redis-server.js'

const run = promisify(execFile)

/**
 * A private MariaDB or PostgreSQL server the lab owns, on its own port and data dir, so it can be frozen and
 * killed (T10, T12) without touching the machine's shared servers. `url` reaches its database `test`.
 */
export interface PrivateSqlServer {
  url: string
  /** SIGKILL of every process of the server, then a start on the same data dir after `downMs` (crash recovery). */
  restart(downMs: number): Promise<void>
  /** SIGSTOP of every process of the server, SIGCONT after `ms`. */
  pause(ms: number): Promise<void>
  stop(): Promise<void>
}

/** Spawns a server with its stdout and stderr appended to `log` (why a restart failed is then on disk). */
function spawnLogged(log: string, command: string, args: string[], options: SpawnOptions): ChildProcess {
  const fd = openSync(log, 'a')
  try {
    return spawn(command, args, { ...options, stdio: ['ignore', fd, fd] })
  } finally {
    closeSync(fd)
  }
}

/** The uid and gid of a system user (the servers refuse to run as root). */
async function account(user: string): Promise<{ uid: number; gid: number }> {
  const uid = Number((await run('id', ['-u', user])).stdout.trim())
  const gid = Number((await run('id', ['-g', user])).stdout.trim())
  return { uid, gid }
}

/** Every process of a server started in its own process group: the group leader and its children. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // the group is gone
  }
}

/**
 * SIGKILL of the whole group, then waits until none of it is left: a PostgreSQL started while a killed backend
 * still holds the old shared memory refuses to start ("pre-existing shared memory block is still in use").
 */
async function killGroup(child: ChildProcess): Promise<void> {
  if (child.pid === undefined) return
  signalGroup(child, 'SIGKILL')
  for (let i = 0; i < 200 && groupAlive(child.pid); i++) await sleep(25)
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * The server's processes are frozen as a group: PostgreSQL serves each connection from a process of its own, so
 * stopping only the postmaster would leave every open session answering.
 */
function privateServer(
  url: string,
  port: number,
  launch: () => Promise<ChildProcess>,
  first: ChildProcess,
  disk?: LazyMount,
) {
  let child = first
  const server: PrivateSqlServer = {
    url,
    restart: async (downMs) => {
      await killGroup(child)
      // T13: the power goes with the server, so its data dir keeps only what it fsynced.
      disk?.powerLoss()
      await sleep(downMs)
      child = await launch()
      await waitForPort(port, 60_000)
    },
    pause: async (ms) => {
      signalGroup(child, 'SIGSTOP')
      try {
        await sleep(ms)
      } finally {
        signalGroup(child, 'SIGCONT')
      }
    },
    stop: async () => {
      await killGroup(child)
      await disk?.unmount()
    },
  }
  return server
}

/**
 * Where a server's data lives. On a lazy disk (T13), the database is created in the mount's backing directory
 * (as if it had been fsynced: the power cuts under test come later, and creating it through the single-threaded
 * FUSE process would be slow) and the server runs on the mount; the socket and pid files stay off the mount
 * (lazy_fs.py makes no sockets).
 */
async function dataDirs(dir: string, lazy: boolean): Promise<{ init: string; data: string; disk?: LazyMount }> {
  if (!lazy) return { init: join(dir, 'data'), data: join(dir, 'data') }
  const disk = await mountLazyFs(join(dir, 'disk'))
  return { init: join(disk.backing, 'data'), data: join(disk.dir, 'data'), disk }
}

/** A MariaDB server (default durability: InnoDB redo log flushed at each commit) in `dir`, database `test`. */
export async function startPrivateMariadb(port: number, dir: string, lazy = false): Promise<PrivateSqlServer> {
  const { uid, gid } = await account('mysql')
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const { init, data, disk } = await dataDirs(dir, lazy)
  mkdirSync(init, { recursive: true })
  chownSync(dir, uid, gid)
  chownSync(init, uid, gid)
  await run('mariadb-install-db', [
    `--datadir=${init}`,
    '--user=mysql',
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
  ])
  const launch = async (): Promise<ChildProcess> =>
    spawnLogged(
      join(dir, 'mariadbd.log'),
      'mariadbd',
      [
        '--no-defaults',
        `--datadir=${data}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(dir, 'mysqld.sock')}`,
        `--pid-file=${join(dir, 'mysqld.pid')}`,
        '--user=mysql',
      ],
      { detached: true },
    )
  const first = await launch()
  await waitForPort(port, 60_000)
  await run('mariadb', ['-h127.0.0.1', `-P${port}`, '-uroot', '-e', 'CREATE DATABASE IF NOT EXISTS test'])
  return privateServer(`mysql://root@127.0.0.1:${port}/test`, port, launch, first, disk)
}

/** A PostgreSQL 15 server (default durability: fsync on, synchronous commit) in `dir`, database `test`. */
export async function startPrivatePostgres(port: number, dir: string, lazy = false): Promise<PrivateSqlServer> {
  const { uid, gid } = await account('postgres')
  const bin = pgBin()
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const { init, data, disk } = await dataDirs(dir, lazy)
  chownSync(dir, uid, gid)
  if (disk !== undefined) chownSync(disk.backing, uid, gid)
  await run(join(bin, 'initdb'), ['-D', init, '-A', 'trust', '-U', 'postgres'], { uid, gid })
  const launch = async (): Promise<ChildProcess> =>
    spawnLogged(
      join(dir, 'postgres.log'),
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'],
      { detached: true, uid, gid },
    )
  const first = await launch()
  await waitForPort(port, 60_000)
  await run('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-c', 'CREATE DATABASE test'])
  return privateServer(`postgres://postgres@127.0.0.1:${port}/test`, port, launch, first, disk)
}

/** The PostgreSQL server binaries, newest version first (the Debian layout keeps them out of PATH). */
function pgBin(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  const found = versions.find((v) => existsSync(join(root, v, 'bin', 'postgres')))
  return found === undefined ? '/usr/local/bin' : join(root, found, 'bin')
}
