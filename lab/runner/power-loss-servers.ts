import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { join } from 'node:path'
import { sleep } from '../lib/clock.js'
import { type LazyMount, mountLazyFs } from './lazy-fs.js'
import { waitForPort } from './redis-server.js'

/**
 * A single ZooKeeper or etcd server the lab owns for T13 (power loss), its data dir on lazy_fs.py: a restart
 * kills it -9, drops every byte it wrote and did not fsync, and starts it again on what is left.
 */
export interface PowerLossServer {
  url: string
  restart(downMs: number): Promise<void>
  pause(ms: number): Promise<void>
  stop(): Promise<void>
}

const ZK_CLASSPATH = '/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar'

/** Spawns `command` with its output appended to `log` (why a restart failed is then on disk). */
function spawnLogged(log: string, command: string, args: string[]): ChildProcess {
  const fd = openSync(log, 'a')
  try {
    return spawn(command, args, { stdio: ['ignore', fd, fd] })
  } finally {
    closeSync(fd)
  }
}

/** Waits until ZooKeeper answers `srvr` as a standalone server (it accepts connections before it has loaded). */
async function untilServing(port: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const answer = await new Promise<string>((resolve) => {
      let text = ''
      const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('srvr'))
      socket.on('data', (chunk) => {
        text += chunk.toString()
      })
      socket.on('close', () => resolve(text))
      socket.on('error', () => resolve(''))
      socket.setTimeout(2_000, () => socket.destroy())
    })
    if (answer.includes('Mode: standalone')) return
    await sleep(100)
  }
  throw new Error(`lab: ZooKeeper on ${port} does not serve`)
}

async function killNow(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

/**
 * `ready`: resolves once the server serves (ZooKeeper accepts connections before it has loaded its data, and
 * exits if it cannot: waiting for the port alone would let a run go on against a dead server).
 */
function powerLossServer(
  url: string,
  ready: () => Promise<void>,
  disk: LazyMount,
  launch: () => ChildProcess,
  first: ChildProcess,
): PowerLossServer {
  let child = first
  return {
    url,
    restart: async (downMs) => {
      await killNow(child)
      disk.powerLoss()
      await sleep(downMs)
      child = launch()
      await ready()
    },
    pause: async (ms) => {
      child.kill('SIGSTOP')
      try {
        await sleep(ms)
      } finally {
        child.kill('SIGCONT')
      }
    },
    stop: async () => {
      await killNow(child)
      await disk.unmount()
    },
  }
}

/**
 * A standalone ZooKeeper (its defaults: the transaction log forced to disk before a write is acknowledged) with
 * its dataDir on a lazy disk; the config file and the log stay off it.
 */
export async function startLazyZookeeper(port: number, dir: string): Promise<PowerLossServer> {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const disk = await mountLazyFs(join(dir, 'disk'))
  const config = join(dir, 'zoo.cfg')
  // tickTime 1000 as the project's servers: the clients' 4 s sessions fall inside its 2-20 s bounds.
  writeFileSync(
    config,
    [
      'tickTime=1000',
      `dataDir=${disk.dir}`,
      `clientPort=${port}`,
      'clientPortAddress=127.0.0.1',
      'maxClientCnxns=0',
      'admin.enableServer=false',
      '4lw.commands.whitelist=srvr',
      '',
    ].join('\n'),
  )
  const launch = (): ChildProcess =>
    spawnLogged(join(dir, 'zk.log'), 'java', [
      '-Xmx256m',
      '-cp',
      ZK_CLASSPATH,
      'org.apache.zookeeper.server.quorum.QuorumPeerMain',
      config,
    ])
  const first = launch()
  const ready = async (): Promise<void> => {
    await waitForPort(port, 60_000)
    await untilServing(port)
  }
  await ready()
  // ZooKeeper 3.8 writes its first snapshot (snapshot.0) at startup without fsyncing it: a power cut before the
  // kernel writes it back leaves it empty beside a non-empty transaction log, and the server then refuses to
  // start ("No snapshot found, but there are log entries. Something is broken!"; measured here on the first
  // T13 fault). That is a fresh server's first half-minute; T13 measures a server that has run longer, so its
  // startup writes reach the disk as the kernel's writeback would take them.
  disk.writeback()
  return powerLossServer(`zookeeper://127.0.0.1:${port}`, ready, disk, launch, first)
}

/**
 * A single-member etcd (its defaults: the WAL fdatasynced before a write is acknowledged) with its data dir on a
 * lazy disk in page-cache mode: etcd's bbolt database mmaps its file, which FUSE refuses under direct_io.
 */
export async function startLazyEtcd(clientPort: number, peerPort: number, dir: string): Promise<PowerLossServer> {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const disk = await mountLazyFs(join(dir, 'disk'), { pageCache: true })
  const client = `http://127.0.0.1:${clientPort}`
  const peer = `http://127.0.0.1:${peerPort}`
  const launch = (): ChildProcess =>
    spawnLogged(join(dir, 'etcd.log'), 'etcd', [
      '--name',
      'lazy',
      '--data-dir',
      join(disk.dir, 'etcd'),
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `lazy=${peer}`,
    ])
  const first = launch()
  const ready = () => waitForPort(clientPort, 30_000)
  await ready()
  return powerLossServer(`etcd://127.0.0.1:${clientPort}`, ready, disk, launch, first)
}
