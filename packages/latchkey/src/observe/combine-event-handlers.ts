import type { LockEvent, LockEventHandler } from '../core/events.js'

/**
 * One `onEvent` handler that calls each of `handlers` in turn (`undefined` entries are skipped). A handler that
 * throws does not stop the ones after it; once all have run, its error is thrown (an `AggregateError` when
 * several threw), which `createLocks` reports as a process warning.
 *
 * @example
 * const prom = prometheusMetrics()
 * const otel = openTelemetryInstrumentation()
 * const locks = createLocks({ backend, onEvent: combineEventHandlers(prom.onEvent, otel.onEvent, log) })
 */
export function combineEventHandlers(...handlers: ReadonlyArray<LockEventHandler | undefined>): LockEventHandler {
  const list: LockEventHandler[] = []
  handlers.forEach((handler, i) => {
    if (handler === undefined) return
    if (typeof handler !== 'function') {
      throw new TypeError(
        `latchkey: combineEventHandlers: handlers[${i}] must be a function or undefined, got ${typeof handler}`,
      )
    }
    list.push(handler)
  })
  const [only] = list
  if (list.length === 1 && only !== undefined) return only
  return (event: LockEvent) => {
    let errors: unknown[] | undefined
    for (const handler of list) {
      try {
        handler(event)
      } catch (error) {
        errors ??= []
        errors.push(error)
      }
    }
    if (errors === undefined) return
    if (errors.length === 1) throw errors[0]
    throw new AggregateError(errors, `${errors.length} onEvent handlers threw on "${event.type}"`)
  }
}
