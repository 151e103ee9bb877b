import { type Attributes, context, SpanStatusCode, type Tracer } from '@opentelemetry/api'
import type { LockEvent } from '../core/events.js'

/** The name of the span recorded for each acquisition (and each acquisition that timed out). */
export const ACQUIRE_SPAN = 'latchkey.acquire'
/** The name of the span recorded for a backend error met while acquiring (the acquisition goes on). */
export const BACKEND_ERROR_SPAN = 'latchkey.backend_error'

/**
 * Records spans from lock events, as children of the span active where the event was emitted (the caller
 * of `acquire()`): one per acquisition, from when it was asked for (event time - `waitedMs`) to when it was
 * held, and one per timeout (status error); a zero-length error span per `backend-error`. Other events make
 * no span: they happen on the watchdog's timers, outside the caller's trace.
 */
export function recordSpan(tracer: Tracer, event: LockEvent): void {
  switch (event.type) {
    case 'acquired': {
      const end = nowMs()
      const attributes = {
        ...lockAttributes(event),
        'latchkey.lock.token': event.token.toString(),
        'latchkey.wait_ms': event.waitedMs,
        'latchkey.reentrant': event.reentrant,
      }
      tracer.startSpan(ACQUIRE_SPAN, { startTime: end - event.waitedMs, attributes }, context.active()).end(end)
      return
    }
    case 'timeout': {
      const end = nowMs()
      const attributes = { ...lockAttributes(event), 'latchkey.wait_ms': event.waitedMs, 'error.type': 'timeout' }
      const span = tracer.startSpan(ACQUIRE_SPAN, { startTime: end - event.waitedMs, attributes }, context.active())
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: `lock not acquired within ${Math.round(event.waitedMs)} ms`,
      })
      span.end(end)
      return
    }
    case 'backend-error': {
      const error = event.error
      const attributes = { ...lockAttributes(event), 'error.type': errorType(error) }
      const span = tracer.startSpan(BACKEND_ERROR_SPAN, { attributes }, context.active())
      if (span.isRecording()) {
        span.recordException(error instanceof Error ? error : String(error))
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) })
      }
      span.end()
      return
    }
    default:
      return
  }
}

function lockAttributes(event: LockEvent): Attributes {
  return { 'latchkey.lock.name': event.name, 'latchkey.lock.kind': event.kind, 'latchkey.backend': event.backend }
}

function errorType(error: unknown): string {
  if (!(error instanceof Error)) return typeof error
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? code : error.name
}

/** Epoch ms with sub-millisecond precision, on the monotonic clock the core measures `waitedMs` with. */
function nowMs(): number {
  return performance.timeOrigin + performance.now()
}
