import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { sleep } from '../lib/clock.js'

const run = promisify(execFile)

/**
 * T9: three-member ZooKeeper and etcd clusters whose members live in network namespaces of their own (made by
 * lab/netns.sh; the lab runner and its clients run in the clients' namespace), so one member can be cut off from
 * the other two while the clients still reach every member. The cut is a pair of `ip rule ... blackhole` rules
 * per peer in the router namespace: packets are dropped silently, as in a real partition, and the heal deletes them.
 */

/** The namespace prefix netns.sh used; set by `netns.sh run` for the processes it starts. */
export const NETNS_PREFIX = process.env.LAB_IN_NETNS

/** Which member a T9 fault cuts off from the others. */
export type CutWhich = 'leader' | 'holder-follower'

/** A cluster the lab can partition. */
export interface NetnsCluster {
  url: string
  /**
   * Cuts one member off from the other members for `ms`, then heals. `holderPid`: the client that holds the lock,
   * for `holder-follower` (a follower that one of the holder's connections goes to). Says what it cut.
   */
  partition(which: CutWhich, holderPid: number, ms: number): Promise<string>
  /** Whether one of client process `pid`'s connections goes to a follower. */
  onFollower(pid: number): Promise<boolean>
  stop(): Promise<void>
}

interface Member {
  index: number
  ns: string
  ip: string
  child: ChildProcess | undefined
}

function members(kind: 'z' | 'e', first: number): Member[] {
  if (NETNS_PREFIX === undefined) throw new TypeError('lab: T9 runs inside the namespaces of lab/netns.sh')
  return [0, 1, 2].map((i) => ({
    index: i + 1,
    ns: `${NETNS_PREFIX}${kind}${i + 1}`,
    ip: `10.78.${first + i}.2`,
    child: undefined,
  }))
}

/** Starts `command` in namespace `ns` (`ip netns exec` replaces itself with the command: the pid is the server's). */
function inNamespace(ns: string, command: string, args: string[]): ChildProcess {
  return spawn('ip', ['netns', 'exec', ns, command, ...args], { stdio: 'ignore' })
}

async function waitForTcp(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host, port }, () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
      socket.setTimeout(1_000, () => {
        socket.destroy()
        resolve(false)
      })
    })
    if (up) return
    await sleep(200)
  }
  throw new Error(`lab: nothing listens on ${host}:${port} after ${timeoutMs} ms`)
}

/** Adds (or deletes) the router's blackhole rules between `cut` and every other member, both directions. */
async function blackhole(action: 'add' | 'del', cut: Member, others: Member[]): Promise<void> {
  const router = `${NETNS_PREFIX}r`
  for (const other of others) {
    for (const [from, to] of [
      [cut.ip, other.ip],
      [other.ip, cut.ip],
    ]) {
      await run('ip', ['-n', router, 'rule', action, 'from', from!, 'to', to!, 'blackhole'])
    }
  }
}

/** The peer addresses of `pid`'s established TCP connections to `port` (the members the client talks to). */
async function peersOf(pid: number, port: number): Promise<string[]> {
  const { stdout } = await run('ss', ['-Htnp', 'state', 'established', `( dport = :${port} )`])
  return stdout
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => {
      const peer = line.trim().split(/\s+/)[3] ?? ''
      return peer.slice(0, peer.lastIndexOf(':'))
    })
}

function partitioner(all: Member[], clientPort: number, leader: () => Promise<Member>) {
  return async (which: CutWhich, holderPid: number, ms: number): Promise<string> => {
    const lead = await leader()
    let cut = lead
    let why = `the leader (member ${lead.index})`
    if (which === 'holder-follower') {
      const peers = await peersOf(holderPid, clientPort)
      const followers = all.filter((m) => m !== lead)
      const serving = followers.find((m) => peers.includes(m.ip))
      cut = serving ?? followers[0]!
      why =
        serving === undefined
          ? `follower ${cut.index} (the holder talks only to the leader ${lead.index})`
          : `follower ${cut.index}, which serves the holder`
    }
    await blackhole(
      'add',
      cut,
      all.filter((m) => m !== cut),
    )
    try {
      await sleep(ms)
    } finally {
      await blackhole(
        'del',
        cut,
        all.filter((m) => m !== cut),
      )
    }
    return `cut ${why} off from the other members for ${ms} ms`
  }
}

async function onFollower(all: Member[], clientPort: number, lead: Member, pid: number): Promise<boolean> {
  const peers = await peersOf(pid, clientPort)
  return all.some((m) => m !== lead && peers.includes(m.ip))
}

const kill = (m: Member): void => {
  m.child?.kill('SIGKILL')
  m.child = undefined
}

// ---- ZooKeeper ----

const ZK_CLASSPATH = '/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar'

function fourLetter(host: string, word: string): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const socket = createConnection({ host, port: 2181 }, () => socket.write(word))
    socket.on('data', (chunk) => {
      text += chunk.toString()
    })
    socket.on('close', () => resolve(text))
    socket.on('error', () => resolve(''))
    socket.setTimeout(1_000, () => socket.destroy())
  })
}

/** A three-member ensemble (tickTime 1 s, as the project's), one member per namespace, fresh data in `dataRoot`. */
export async function netnsZookeeper(dataRoot: string): Promise<NetnsCluster> {
  const all = members('z', 1)
  const servers = all.map((m) => `server.${m.index}=${m.ip}:2888:3888`).join('\n')
  for (const m of all) {
    const dir = join(dataRoot, `netns-zk-${m.index}`)
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(join(dir, 'data'), { recursive: true })
    writeFileSync(join(dir, 'data', 'myid'), `${m.index}\n`)
    writeFileSync(
      join(dir, 'zoo.cfg'),
      `tickTime=1000\ninitLimit=10\nsyncLimit=5\ndataDir=${join(dir, 'data')}\nclientPort=2181\nclientPortAddress=${m.ip}\nmaxClientCnxns=0\nadmin.enableServer=false\n${servers}\n`,
    )
    m.child = inNamespace(m.ns, 'java', [
      '-Xmx256m',
      '-Dzookeeper.4lw.commands.whitelist=*',
      '-cp',
      ZK_CLASSPATH,
      'org.apache.zookeeper.server.quorum.QuorumPeerMain',
      join(dir, 'zoo.cfg'),
    ])
  }
  const leader = async (): Promise<Member> => {
    for (let attempt = 0; attempt < 300; attempt++) {
      for (const m of all) if ((await fourLetter(m.ip, 'srvr')).includes('Mode: leader')) return m
      await sleep(200)
    }
    throw new Error('lab: the namespaced ZooKeeper ensemble has no leader')
  }
  for (const m of all) await waitForTcp(m.ip, 2181, 60_000)
  await leader()
  return {
    url: `zookeeper://${all.map((m) => `${m.ip}:2181`).join(',')}`,
    partition: partitioner(all, 2181, leader),
    onFollower: async (pid) => onFollower(all, 2181, await leader(), pid),
    stop: async () => all.forEach(kill),
  }
}

// ---- etcd ----

/** A three-member etcd cluster (default heartbeat 100 ms, election 1 s), one member per namespace. */
export async function netnsEtcd(dataRoot: string): Promise<NetnsCluster> {
  const all = members('e', 4)
  const initial = all.map((m) => `n${m.index}=http://${m.ip}:2380`).join(',')
  for (const m of all) {
    const dir = join(dataRoot, `netns-etcd-${m.index}`)
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    m.child = inNamespace(m.ns, 'etcd', [
      '--name',
      `n${m.index}`,
      '--data-dir',
      dir,
      '--listen-client-urls',
      `http://${m.ip}:2379`,
      '--advertise-client-urls',
      `http://${m.ip}:2379`,
      '--listen-peer-urls',
      `http://${m.ip}:2380`,
      '--initial-advertise-peer-urls',
      `http://${m.ip}:2380`,
      '--initial-cluster',
      initial,
      '--initial-cluster-state',
      'new',
      '--initial-cluster-token',
      'latchkey-lab-netns',
    ])
  }
  const leader = async (): Promise<Member> => {
    for (let attempt = 0; attempt < 300; attempt++) {
      for (const m of all) {
        const status = await fetch(`http://${m.ip}:2379/v3/maintenance/status`, {
          method: 'POST',
          body: '{}',
          signal: AbortSignal.timeout(1_000),
        })
          .then((r) => r.json() as Promise<{ header?: { member_id?: string }; leader?: string }>)
          .catch(() => undefined)
        if (status?.leader !== undefined && status.leader === status.header?.member_id) return m
      }
      await sleep(200)
    }
    throw new Error('lab: the namespaced etcd cluster has no leader')
  }
  for (const m of all) await waitForTcp(m.ip, 2379, 60_000)
  await leader()
  return {
    url: `etcd://${all.map((m) => `${m.ip}:2379`).join(',')}`,
    partition: partitioner(all, 2379, leader),
    onFollower: async (pid) => onFollower(all, 2379, await leader(), pid),
    stop: async () => all.forEach(kill),
  }
}
