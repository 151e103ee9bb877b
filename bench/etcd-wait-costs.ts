/**
 * What the steps of the two etcd waiting recipes cost the client, one at a time, on latchkey's transport: a read
 * of a lock's line (a Range round trip), and a watch of one key created from a read's revision and cancelled (Go's
 * `waitDelete`: what each acquisition that waits costs in Go's concurrency.Mutex recipe, beside a second read).
 * Each step runs alone and is followed by a 3 ms sleep, as steps are spaced in a contended cell, so each pays its
 * own wake-ups; the sleep alone is measured too and subtracted. Set beside the CPU a delete costs a process that
 * only follows it (`BYSTANDERS=2 npx tsx bench/etcd-contended-cpu.ts`), it says which recipe costs less per
 * acquisition at a given number of processes (bench/ETCD-CPU.md).
 *
 *   npx tsx bench/etcd-wait-costs.ts [steps per measure, default 800]   (LATCHKEY_ETCD_URL as for the other scripts)
 */
import { prefixRange } from '../packages/latchkey/src/backends/etcd/keys.js'
import type { openHttp2EtcdClient as OpenWireClient } from '../packages/latchkey/src/backends/etcd/wire/http2-etcd-client.js'
import { keepWatchStream, keyRange } from './lib/etcd-wire-session.js'

const WIRE_CLIENT = '../packages/latchkey/dist/backends/etcd/wire/http2-etcd-client.js'
const ETCD = process.env.LATCHKEY_ETCD_URL ?? 'http://127.0.0.1:2379'
const steps = Number(process.argv[2] ?? 800)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const wire = (await import(WIRE_CLIENT)) as { openHttp2EtcdClient: typeof OpenWireClient }
const client = wire.openHttp2EtcdClient({ hosts: [ETCD], callTimeoutMs: 10_000 })
const prefix = `lk-wait-costs-${process.pid}/`
const all = prefixRange(prefix)
const line = { key: all.start, range_end: all.end, keys_only: true }
// A line of 4 keys, one per process as in the contended cells.
for (let i = 0; i < 4; i++) {
  await client.kv.txn({ success: [{ request_put: { key: Buffer.from(`${prefix}${i}`), value: Buffer.alloc(0) } }] })
}
const keeper = await keepWatchStream(client, `${prefix}none/`)

const read = async (): Promise<string> => (await client.kv.range(line)).header.revision
const measured: Record<string, () => Promise<unknown>> = {
  'sleep alone (3 ms timer)': async () => {},
  'read the line (Range)': read,
  'watch a key from a read, then cancel': async () => {
    const watcher = client
      .watch()
      .inRange(keyRange(Buffer.from(`${prefix}0`)), revision)
      .only('delete')
      .watcher()
    await new Promise<void>((resolve) => watcher.on('connected', () => resolve()))
    await watcher.cancel()
  },
}
let revision = await read()

const results = new Map<string, number[]>()
for (let round = 0; round < 3; round++) {
  for (const [name, step] of Object.entries(measured)) {
    for (let i = 0; i < 50; i++) await step()
    const start = process.cpuUsage()
    for (let i = 0; i < steps; i++) {
      await step()
      await sleep(3)
    }
    const used = process.cpuUsage(start)
    results.set(name, [...(results.get(name) ?? []), (used.user + used.system) / steps])
  }
  revision = await read()
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const base = median(results.get('sleep alone (3 ms timer)') ?? [0])
console.log(`client CPU per step, µs (median of 3 rounds of ${steps}; the sleep's own cost subtracted from the others)`)
for (const [name, xs] of results) {
  const m = median(xs)
  console.log(`  ${name.padEnd(40)} ${(name.startsWith('sleep') ? m : m - base).toFixed(0).padStart(5)}`)
}
await keeper.cancel()
await client.kv.txn({ success: [{ request_delete_range: { key: line.key, range_end: line.range_end } }] })
client.close()
