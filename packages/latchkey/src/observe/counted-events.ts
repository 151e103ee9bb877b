import type { LockEvent } from '../core/events.js'

/** One lock event type counted one by one: the counter's base name, help text and OpenTelemetry unit. */
export interface CountedEvent {
  /** `latchkey_<name>_total` in Prometheus, `latchkey.lock.<name>` in OpenTelemetry. */
  readonly name: string
  readonly help: string
  readonly unit: string
}

/**
 * The lock events that feed a counter each, the same in `latchkey/prometheus` and `latchkey/opentelemetry`.
 * `acquired` and `released` feed histograms instead; other types go to the `other_events` counter.
 */
export const COUNTED_EVENTS: Readonly<Partial<Record<LockEvent['type'], CountedEvent>>> = Object.freeze({
  timeout: { name: 'timeouts', help: 'Acquisitions that gave up when waitMs ran out', unit: '{timeout}' },
  lost: { name: 'losses', help: 'Leases lost (expired, taken away, or not renewable in time)', unit: '{lease}' },
  renewed: { name: 'renewals', help: 'Lease renewals (by the watchdog or extend())', unit: '{renewal}' },
  'renew-failed': { name: 'renewal_failures', help: 'Renewals that failed (the watchdog retries)', unit: '{renewal}' },
  'release-failed': {
    name: 'release_failures',
    help: 'Releases that failed or found the lease gone (counted once per lease)',
    unit: '{release}',
  },
  'backend-error': { name: 'backend_errors', help: 'Backend errors met while acquiring (retried)', unit: '{error}' },
})
