import type { OutboxPublisher } from './types.js'

/** Options of `outbox.relay(...)`. Durations in milliseconds. */
export interface RelayOptions {
  /** Where messages go, e.g. `rabbitPublisher({ url })`. The relay closes it in `close()`. */
  publisher: OutboxPublisher
  /** Rows read per partition per pass. Default 100. */
  batchSize?: number
  /** Wait between passes that found nothing to do. Default 200. */
  pollMs?: number
  /** Failed publish attempts after which a row is dead-lettered (status `dead`, `last_error` kept). Default 10. */
  maxAttempts?: number
  /** First retry delay of a failed row (or of the relay after a database/broker outage), doubled per attempt. Default 500. */
  backoffMs?: number
  /** Cap of that delay. Default 30_000. */
  maxBackoffMs?: number
  /** TTL of a partition lease; a relay that dies gives its partitions up after this long. Default 10_000. */
  leaseTtlMs?: number
  /** Progress and trouble reports, for logs and metrics; a throwing listener is ignored. */
  onEvent?: (event: RelayEvent) => void
}

/** What a relay reports through `onEvent`. */
export type RelayEvent =
  | { type: 'partition-acquired'; partition: number }
  | { type: 'partition-lost'; partition: number }
  /** Given back on purpose: above this relay's share once another relay joined. */
  | { type: 'partition-released'; partition: number }
  | { type: 'published'; partition: number; ids: readonly string[] }
  | { type: 'failed'; partition: number; id: string; attempts: number; error: Error; retryAt: number }
  | { type: 'dead'; partition: number; id: string; attempts: number; error: Error }
  | { type: 'error'; error: Error }

/** Checked relay options with defaults, frozen. */
export type ResolvedRelayOptions = Readonly<Required<Omit<RelayOptions, 'onEvent'>>> & {
  readonly onEvent: ((event: RelayEvent) => void) | undefined
}

function positive(name: string, value: number | undefined, fallback: number, integer = false): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v))) {
    throw new RangeError(
      `latchkey-tx: relay ${name} must be a positive ${integer ? 'integer' : 'number'}, received ${v}`,
    )
  }
  return v
}

/** Validates relay options before any I/O. */
export function resolveRelayOptions(options: RelayOptions): ResolvedRelayOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`latchkey-tx: outbox.relay needs an options object, received ${String(options)}`)
  }
  const publisher = options.publisher
  if (typeof publisher?.publish !== 'function' || typeof publisher.close !== 'function') {
    throw new TypeError(
      'latchkey-tx: outbox.relay options.publisher must have publish() and close(), e.g. rabbitPublisher({ url })',
    )
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw new TypeError(
      `latchkey-tx: outbox.relay options.onEvent must be a function, received ${typeof options.onEvent}`,
    )
  }
  return Object.freeze({
    publisher,
    batchSize: positive('batchSize', options.batchSize, 100, true),
    pollMs: positive('pollMs', options.pollMs, 200),
    maxAttempts: positive('maxAttempts', options.maxAttempts, 10, true),
    backoffMs: positive('backoffMs', options.backoffMs, 500),
    maxBackoffMs: positive('maxBackoffMs', options.maxBackoffMs, 30_000),
    leaseTtlMs: positive('leaseTtlMs', options.leaseTtlMs, 10_000),
    onEvent: options.onEvent,
  })
}

/** Exponential backoff with jitter in [half, full] of the doubled delay, so retries of many rows spread out. */
export function backoffDelay(attempt: number, o: ResolvedRelayOptions): number {
  const full = Math.min(o.maxBackoffMs, o.backoffMs * 2 ** Math.max(0, attempt - 1))
  return Math.round(full * (0.5 + Math.random() * 0.5))
}
