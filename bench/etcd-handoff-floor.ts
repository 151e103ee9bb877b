/**
 * The floor under a handoff gap on etcd and on ZooKeeper: from the moment one process sends the delete of a key
 * (a release) to the moment another process, watching it, gets the delete event. No lock library is involved:
 * latchkey's etcd transport and node-zookeeper-client, one key, one watcher, sequential rounds. A lock's handoff
 * gap cannot be shorter than this on the same server (etcd's next holder learns its turn from that event; a
 * ZooKeeper waiter from its watch, then reads the children), so it tells how much of a contended gap is the
 * server's write and delivery and how much the client's.
 *
 *   npx tsx bench/etcd-handoff-floor.ts [rounds per run, default 200] [runs, default 3]
 *   (LATCHKEY_ETCD_URL, LATCHKEY_ZK_URL as for the other bench scripts; runs alternate etcd and ZooKeeper)
 */
import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import zookeeper from 'node-zookeeper-client'
import type { openHttp2EtcdClient as OpenWireClient } from '../packages/latchkey/src/backends/etcd/wire/http2-etcd-client.js'
import { hostNow } from './lib/stats.js'

const WIRE_CLIENT = '../packages/latchkey/dist/backends/etcd/wire/http2-etcd-client.js'
const ETCD = process.env.LATCHKEY_ETCD_URL ?? 'http://127.0.0.1:2379'
const ZK = process.env.LATCHKEY_ZK_URL ?? '127.0.0.1:2181'
const WARMUP = 20

type Message = { ready?: true; armed?: true; put?: true; t0?: number; t1?: number }
type Kind = 'etcd' | 'zk'

/** A child: `watch` reports each delete's arrival time, `act` puts the key and deletes it (reporting the send time). */
async function child(kind: Kind, role: 'watch' | 'act', name: string): Promise<void> {
  const send = (m: Message): void => {
    process.send?.(m)
  }
  const on = (handle: (op: string) => void): void => {
    process.on('message', (m: { op: string }) => (m.op === 'exit' ? process.exit(0) : handle(m.op)))
  }
  if (kind === 'etcd') {
    const wire = (await import(WIRE_CLIENT)) as { openHttp2EtcdClient: typeof OpenWireClient }
    const client = wire.openHttp2EtcdClient({ hosts: [ETCD], callTimeoutMs: 10_000 })
    const key = Buffer.from(`${name}/k`)
    if (role === 'watch') {
      const range = { start: Buffer.from(`${name}/`), end: Buffer.from(`${name}0`) }
      const watcher = client.watch().inRange(range).only('delete').watcher()
      watcher.on('delete', () => send({ t1: hostNow() }))
      watcher.on('connected', () => send({ ready: true }))
      on(() => send({ armed: true })) // the prefix watch is always armed
      return
    }
    on(async (op) => {
      if (op === 'put') {
        await client.kv.txn({ success: [{ request_put: { key, value: Buffer.from('v') } }] })
        send({ put: true })
      } else {
        const t0 = hostNow()
        await client.kv.txn({ success: [{ request_delete_range: { key } }] })
        send({ t0 })
      }
    })
    send({ ready: true })
    return
  }
  const zk = zookeeper.createClient(ZK)
  await new Promise<void>((resolve) => {
    zk.once('connected', () => resolve())
    zk.connect()
  })
  const path = `/${name}`
  if (role === 'watch') {
    on(() =>
      zk.exists(
        path,
        () => send({ t1: hostNow() }),
        () => send({ armed: true }),
      ),
    )
  } else {
    on((op) => {
      if (op === 'put') zk.create(path, Buffer.alloc(0), zookeeper.CreateMode.EPHEMERAL, () => send({ put: true }))
      else {
        const t0 = hostNow()
        zk.remove(path, -1, () => send({ t0 }))
      }
    })
  }
  send({ ready: true })
}

function next(p: ChildProcess, field: keyof Message): Promise<Message> {
  return new Promise((resolve) => {
    const handle = (m: Message): void => {
      if (m[field] === undefined) return
      p.off('message', handle)
      resolve(m)
    }
    p.on('message', handle)
  })
}

function ask(p: ChildProcess, op: string, field: keyof Message): Promise<Message> {
  const answer = next(p, field)
  p.send({ op })
  return answer
}

/** The median delete-to-event time of `rounds` sequential handoffs. */
async function floor(kind: Kind, rounds: number): Promise<number> {
  const name = `lkfloor${process.pid}${Math.random().toString(36).slice(2, 8)}`
  const self = fileURLToPath(import.meta.url)
  const spawn = (role: string) => fork(self, [kind, role, name], { execArgv: ['--import', 'tsx'] })
  const watcher = spawn('watch')
  const actor = spawn('act')
  await Promise.all([next(watcher, 'ready'), next(actor, 'ready')])
  const gaps: number[] = []
  for (let i = 0; i < rounds + WARMUP; i++) {
    await ask(actor, 'put', 'put')
    await ask(watcher, 'arm', 'armed')
    const event = next(watcher, 't1')
    const { t0 } = await ask(actor, 'del', 't0')
    const { t1 } = await event
    if (i >= WARMUP) gaps.push((t1 as number) - (t0 as number))
  }
  for (const p of [watcher, actor]) p.send({ op: 'exit' })
  gaps.sort((a, b) => a - b)
  return gaps[Math.floor(gaps.length / 2)] as number
}

const [kindArg, role, name] = process.argv.slice(2)
if (role !== undefined && name !== undefined) await child(kindArg as Kind, role as 'watch' | 'act', name)
else {
  const rounds = Number(process.argv[2] ?? 200)
  const runs = Number(process.argv[3] ?? 3)
  const floors: Record<Kind, number[]> = { etcd: [], zk: [] }
  for (let r = 0; r < runs; r++) {
    for (const kind of ['etcd', 'zk'] as const) floors[kind].push(await floor(kind, rounds))
  }
  const fmt = (v: number[]) => {
    const s = [...v].sort((a, b) => a - b)
    return `${(s[Math.floor(s.length / 2)] as number).toFixed(3)} [${(s[0] as number).toFixed(3)}-${(s[s.length - 1] as number).toFixed(3)}]`
  }
  console.log(`delete sent -> delete event in another process, p50 ms, median [min-max] of ${runs} runs:`)
  console.log(`  etcd (${ETCD}): ${fmt(floors.etcd)}`)
  console.log(`  ZooKeeper (${ZK}): ${fmt(floors.zk)}`)
}
