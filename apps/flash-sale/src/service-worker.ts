/**
 * One service process of a cluster (forked by cluster.ts). Receives its options over IPC as a
 * {@link WorkerStart} message (never in argv, which `ps` shows to every user: they hold passwords and the admin
 * token), reports `{ type: 'ready', url }`, and shuts down cleanly on `{ type: 'shutdown' }` or SIGTERM.
 */
import { redactText } from 'latchkey'
import { type RunningService, type ServiceOptions, startService } from './service.js'

/** The first message a service worker expects from its parent. */
export interface WorkerStart {
  readonly type: 'start'
  readonly options: ServiceOptions
}

let service: RunningService | undefined
let stopping = false
const stop = (): void => {
  if (stopping) return
  stopping = true
  void (service?.close() ?? Promise.resolve()).finally(() => {
    if (process.connected) process.disconnect()
    process.exit(0)
  })
}
process.on('message', (message) => {
  const type = (message as { type?: unknown }).type
  if (type === 'shutdown') stop()
  else if (type === 'start' && service === undefined && !stopping) {
    startService((message as WorkerStart).options).then(
      (started) => {
        service = started
        process.send?.({ type: 'ready', url: started.url, pid: process.pid })
      },
      (error: unknown) => {
        console.error(`flash-sale worker failed to start: ${redactText(String(error))}`)
        process.exit(1)
      },
    )
  }
})
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
// The parent going away (IPC closed) means nobody will stop us: stop ourselves.
process.on('disconnect', stop)
