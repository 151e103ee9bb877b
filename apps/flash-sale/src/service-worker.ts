/**
 * One service process of a cluster (forked by cluster.ts). Reads its options as JSON in argv[2], reports
 * `{ type: 'ready', url }` over IPC, and shuts down cleanly on `{ type: 'shutdown' }` or SIGTERM.
 */
import { type ServiceOptions, startService } from './service.js'

const options = JSON.parse(process.argv[2] ?? '{}') as ServiceOptions
const service = await startService(options)
let stopping = false
const stop = (): void => {
  if (stopping) return
  stopping = true
  void service.close().finally(() => {
    if (process.connected) process.disconnect()
    process.exit(0)
  })
}
process.on('message', (message) => {
  if ((message as { type?: unknown }).type === 'shutdown') stop()
})
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
// The parent going away (IPC closed) means nobody will stop us: stop ourselves.
process.on('disconnect', stop)
process.send?.({ type: 'ready', url: service.url, pid: process.pid })
