import { execFile, spawn } from 'node:child_process'
import { mkdirSync, rmSync } from 'node:fs'
import { createConnection } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { sleep } from '../lib/clock.js'
import { waitForPort } from './redis-server.js'

const run = promisify(execFile)

/** A three-member lock service the lab can fault: its client URL, and its current leader's process. */
export interface Cluster {
  url: string
  /** SIGKILL of the leader, restarted after `downMs` with its data (a crash of a durable member). */
  killLeader(downMs: number): Promise<void>
  /** SIGSTOP of the leader for `ms`. */
  pauseLeader(ms: number): Promise<void>
  stop(): Promise<void>
}

/** The pid of the process listening on 127.0.0.1:`port`. */
async function pidOnPort(port: number): Promise<number> {
  const { stdout } = await run('ss', ['-Htlnp', `sport = :${port}`])
  const pid = /pid=(\d+)/.exec(stdout)?.[1]
  if (pid === undefined) throw new Error(`lab: no process listens on ${port}`)
  return Number(pid)
}

async function freeze(pid: number, ms: number): Promise<void> {
  process.kill(pid, 'SIGSTOP')
  try {
    await sleep(ms)
  } finally {
    process.kill(pid, 'SIGCONT')
  }
}

// ---- ZooKeeper: the project's three-member ensemble (scripts/servers/zookeeper.sh start-ensemble) ----

const ZK_SCRIPT = join(import.meta.dirname, '..', '..', 'scripts', 'servers', 'zookeeper.sh')
const ZK_PORTS = (process.env.LATCHKEY_ZK_ENSEMBLE_PORTS ?? '2291,2292,2293').split(',').map(Number)

/** A ZooKeeper four-letter word's answer (`srvr` says whether a member leads). */
function fourLetter(port: number, word: string): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(word))
    socket.on('data', (chunk) => {
      text += chunk.toString()
    })
    socket.on('close', () => resolve(text))
    socket.on('error', () => resolve(''))
    socket.setTimeout(2_000, () => socket.destroy())
  })
}

async function zkLeader(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    for (const [index, port] of ZK_PORTS.entries()) {
      if ((await fourLetter(port, 'srvr')).includes('Mode: leader')) return index + 1
    }
    await sleep(200)
  }
  throw new Error('lab: the ZooKeeper ensemble has no leader')
}

/** Starts (or finds) the project's ZooKeeper ensemble. */
export async function zookeeperEnsemble(): Promise<Cluster> {
  await run('bash', [ZK_SCRIPT, 'start-ensemble'], { timeout: 120_000 })
  await zkLeader()
  return {
    url: `zookeeper://${ZK_PORTS.map((p) => `127.0.0.1:${p}`).join(',')}`,
    killLeader: async (downMs) => {
      const member = await zkLeader()
      await run('bash', [ZK_SCRIPT, 'kill-member', String(member)])
      await sleep(downMs)
      await run('bash', [ZK_SCRIPT, 'start-member', String(member)])
      await waitForPort(ZK_PORTS[member - 1]!, 60_000)
    },
    pauseLeader: async (ms) => freeze(await pidOnPort(ZK_PORTS[(await zkLeader()) - 1]!), ms),
    // The ensemble belongs to the project's scripts (the test suite uses it too): it keeps running.
    stop: async () => {},
  }
}

// ---- etcd: three members the lab starts itself, in lab/.data ----

const ETCD_BASE = Number(process.env.LAB_ETCD_CLUSTER_PORT ?? 23791)

interface EtcdMember {
  name: string
  client: number
  peer: number
  dir: string
  pid: number | undefined
}

/** Starts a three-member etcd cluster on 127.0.0.1 (client ports 23791-23793), fresh data in `dataRoot`. */
export async function etcdCluster(dataRoot: string): Promise<Cluster> {
  const members: EtcdMember[] = [0, 1, 2].map((i) => ({
    name: `lab${i + 1}`,
    client: ETCD_BASE + i,
    peer: ETCD_BASE + 100 + i,
    dir: join(dataRoot, `etcd-${i + 1}`),
    pid: undefined,
  }))
  const initial = members.map((m) => `${m.name}=http://127.0.0.1:${m.peer}`).join(',')
  const launch = (m: EtcdMember, state: 'new' | 'existing'): void => {
    mkdirSync(m.dir, { recursive: true })
    const child = spawn(
      'etcd',
      [
        '--name',
        m.name,
        '--data-dir',
        m.dir,
        '--listen-client-urls',
        `http://127.0.0.1:${m.client}`,
        '--advertise-client-urls',
        `http://127.0.0.1:${m.client}`,
        '--listen-peer-urls',
        `http://127.0.0.1:${m.peer}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${m.peer}`,
        '--initial-cluster',
        initial,
        '--initial-cluster-state',
        state,
        '--initial-cluster-token',
        'latchkey-lab',
      ],
      { stdio: 'ignore', detached: false },
    )
    m.pid = child.pid
  }
  for (const m of members) rmSync(m.dir, { recursive: true, force: true })
  for (const m of members) launch(m, 'new')
  for (const m of members) await waitForPort(m.client, 30_000)
  const leader = async (): Promise<EtcdMember> => {
    for (let attempt = 0; attempt < 100; attempt++) {
      for (const m of members) {
        const status = await fetch(`http://127.0.0.1:${m.client}/v3/maintenance/status`, {
          method: 'POST',
          body: '{}',
        })
          .then((r) => r.json() as Promise<{ header?: { member_id?: string }; leader?: string }>)
          .catch(() => undefined)
        if (status?.leader !== undefined && status.leader === status.header?.member_id) return m
      }
      await sleep(200)
    }
    throw new Error('lab: the etcd cluster has no leader')
  }
  await leader()
  const kill = (m: EtcdMember): void => {
    if (m.pid !== undefined) {
      try {
        process.kill(m.pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    m.pid = undefined
  }
  return {
    url: `etcd://${members.map((m) => `127.0.0.1:${m.client}`).join(',')}`,
    killLeader: async (downMs) => {
      const m = await leader()
      kill(m)
      await sleep(downMs)
      launch(m, 'existing')
      await waitForPort(m.client, 30_000)
    },
    pauseLeader: async (ms) => {
      const m = await leader()
      if (m.pid !== undefined) await freeze(m.pid, ms)
    },
    stop: async () => {
      for (const m of members) kill(m)
    },
  }
}
