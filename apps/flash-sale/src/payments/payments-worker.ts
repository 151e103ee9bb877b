/**
 * One process of the payments stack (forked by payments-stack.ts): the payment service, the coordinator or the
 * notifier. Its options come over IPC (they hold URLs with passwords and the admin token, which argv would show
 * to every user), it answers `{ type: 'ready', url }`, and stops on `{ type: 'shutdown' }`, SIGTERM or the
 * parent going away.
 */
import { redactText } from 'latchkey'
import { type CoordinatorServiceOptions, startCoordinatorService } from './coordinator-service.js'
import { type NotifierOptions, startNotifier } from './notifier.js'
import { type PaymentServiceOptions, startPaymentService } from './payment-service.js'

/** The first message a payments worker expects. */
export type PaymentsWorkerStart =
  | { readonly type: 'start'; readonly role: 'payment'; readonly options: PaymentServiceOptions }
  | { readonly type: 'start'; readonly role: 'coordinator'; readonly options: CoordinatorServiceOptions }
  | { readonly type: 'start'; readonly role: 'notifier'; readonly options: NotifierOptions }

function start(message: PaymentsWorkerStart): Promise<{ url: string; close(): Promise<void> }> {
  if (message.role === 'payment') return startPaymentService(message.options)
  if (message.role === 'coordinator') return startCoordinatorService(message.options)
  return startNotifier(message.options)
}

let running: { close(): Promise<void> } | undefined
let stopping = false
const stop = (): void => {
  if (stopping) return
  stopping = true
  void (running?.close() ?? Promise.resolve()).finally(() => {
    if (process.connected) process.disconnect()
    process.exit(0)
  })
}
process.on('message', (message) => {
  const m = message as PaymentsWorkerStart | { type: 'shutdown' }
  if (m.type === 'shutdown') stop()
  else if (m.type === 'start' && running === undefined && !stopping) {
    start(m).then(
      (started) => {
        running = started
        process.send?.({ type: 'ready', url: started.url, pid: process.pid })
      },
      (error: unknown) => {
        console.error(`flash-sale ${m.role} failed to start: ${redactText(String(error))}`)
        process.exit(1)
      },
    )
  }
})
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
process.on('disconnect', stop)
