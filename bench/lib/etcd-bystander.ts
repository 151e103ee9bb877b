/**
 * A bystander of bench/etcd-contended-cpu.ts (BYSTANDERS=n): a process that only follows the lock's deletes, forked
 * with the lock's key, the window in seconds and the library build to load. It reports its CPU over the window and
 * the watch responses it decoded: what each delete costs a process it does not concern.
 *
 * On the backend's shared watch of the name, opened by one subscription that never waits, as a process with a waiter
 * further back in line has it; with BARE_BYSTANDERS=1, on a bare watch of the transport (no backend), which tells
 * the backend's dispatch from the transport's decoding.
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const ETCD = process.env.LATCHKEY_ETCD_URL ?? 'http://127.0.0.1:2379'
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const [, , key, secondsArg, dist] = process.argv
const grpc = await import(pathToFileURL(resolve(dist as string, 'backends/etcd/wire/grpc-http2.js')).href)
let messages = 0
const stream = grpc.GrpcConnection.prototype.stream
grpc.GrpcConnection.prototype.stream = function (this: unknown, path: string) {
  const s = stream.call(this, path)
  s.on('message', () => messages++)
  return s
}
let stop: () => Promise<void>
if (process.env.BARE_BYSTANDERS === '1') {
  // The same deletes on a bare watch of the transport (no backend): what the backend's dispatch adds to each.
  const keys = await import(pathToFileURL(resolve(dist as string, 'backends/etcd/keys.js')).href)
  const wire = await import(pathToFileURL(resolve(dist as string, 'backends/etcd/wire/http2-etcd-client.js')).href)
  const client = wire.openHttp2EtcdClient({ hosts: [ETCD], callTimeoutMs: 10_000 })
  const range = keys.prefixRange(new keys.KeyLayout('latchkey').lockPrefix(`cpuprof:${key}`))
  const watcher = client.watch().inRange(range).only('delete').watcher()
  watcher.on('delete', () => {})
  stop = async () => {
    await watcher.cancel()
    client.close()
  }
} else {
  const lib = await import(pathToFileURL(resolve(dist as string, 'index.js')).href)
  const backend = await lib.backendFromUrl(`etcd://${new URL(ETCD).host}`)
  const sub = backend.subscribe({ key: `cpuprof:${key}`, kind: 'mutex' })
  stop = async () => {
    sub.close()
    await backend.close()
  }
}
await sleep(1_500)
const cpu0 = process.cpuUsage()
const messages0 = messages
await sleep(Number(secondsArg) * 1_000)
const used = process.cpuUsage(cpu0)
process.send?.({ cpuMs: (used.user + used.system) / 1_000, messages: messages - messages0 })
await stop()
process.exit(0)
