import type { Attributes, Counter, Histogram, Meter, UpDownCounter } from '@opentelemetry/api'
import type { LockEvent } from '../core/events.js'
import { HeldLeases } from '../observe/held-leases.js'

/**
 * The OpenTelemetry instruments of latchkey locks, attributed by `latchkey.lock.kind` and `latchkey.backend`
 * (and `latchkey.lock.name` when asked), fed one lock event at a time.
 */
export class LockInstruments {
  private readonly wait: Histogram
  private readonly hold: Histogram
  private readonly acquisitions: Counter
  private readonly timeouts: Counter
  private readonly losses: Counter
  private readonly renewals: Counter
  private readonly renewalFailures: Counter
  private readonly releaseFailures: Counter
  private readonly backendErrors: Counter
  private readonly other: Counter
  private readonly held: UpDownCounter
  private readonly leases = new HeldLeases()

  constructor(
    meter: Meter,
    buckets: readonly number[],
    private readonly nameAttribute: boolean,
  ) {
    const advice = { explicitBucketBoundaries: [...buckets] }
    this.wait = meter.createHistogram('latchkey.lock.wait.duration', {
      description: 'Time from asking for a lock to holding it (reentrant acquisitions excluded)',
      unit: 's',
      advice,
    })
    this.hold = meter.createHistogram('latchkey.lock.hold.duration', {
      description: 'Time a lease was held, from acquisition to release',
      unit: 's',
      advice,
    })
    const counter = (name: string, description: string, unit: string) =>
      meter.createCounter(name, { description, unit })
    this.acquisitions = counter('latchkey.lock.acquisitions', 'Leases acquired', '{acquisition}')
    this.timeouts = counter('latchkey.lock.timeouts', 'Acquisitions that gave up when waitMs ran out', '{timeout}')
    this.losses = counter('latchkey.lock.losses', 'Leases lost (expired, taken away, not renewed in time)', '{lease}')
    this.renewals = counter('latchkey.lock.renewals', 'Lease renewals (watchdog or extend())', '{renewal}')
    this.renewalFailures = counter('latchkey.lock.renewal_failures', 'Renewals that failed', '{renewal}')
    this.releaseFailures = counter('latchkey.lock.release_failures', 'Releases that failed', '{release}')
    this.backendErrors = counter('latchkey.backend.errors', 'Backend errors while acquiring (retried)', '{error}')
    this.other = counter('latchkey.lock.other_events', 'Lock events of a type this version does not know', '{event}')
    this.held = meter.createUpDownCounter('latchkey.lock.held', {
      description: 'Leases held now by this process (reentrant acquisitions share one)',
      unit: '{lease}',
    })
  }

  record(event: LockEvent): void {
    const change = this.leases.update(event)
    if (change === 'repeat') return
    const attributes: Attributes = { 'latchkey.lock.kind': event.kind, 'latchkey.backend': event.backend }
    if (this.nameAttribute) attributes['latchkey.lock.name'] = event.name
    switch (event.type) {
      case 'acquired':
        this.acquisitions.add(1, { ...attributes, 'latchkey.reentrant': event.reentrant })
        if (!event.reentrant) this.wait.record(event.waitedMs / 1000, attributes)
        break
      case 'released':
        this.hold.record(event.heldMs / 1000, attributes)
        break
      case 'timeout':
        this.timeouts.add(1, attributes)
        break
      case 'lost':
        this.losses.add(1, attributes)
        break
      case 'renewed':
        this.renewals.add(1, attributes)
        break
      case 'renew-failed':
        this.renewalFailures.add(1, attributes)
        break
      case 'release-failed':
        this.releaseFailures.add(1, attributes)
        break
      case 'backend-error':
        this.backendErrors.add(1, attributes)
        break
      default:
        // A newer core may add event types: count them rather than fail.
        this.other.add(1, { ...attributes, 'latchkey.event.type': String((event as { type: unknown }).type) })
    }
    if (change !== 0) this.held.add(change, attributes)
  }
}
