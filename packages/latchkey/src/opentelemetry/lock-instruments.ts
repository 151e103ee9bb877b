import type { Attributes, Counter, Histogram, Meter, UpDownCounter } from '@opentelemetry/api'
import type { LockEvent } from '../core/events.js'
import { COUNTED_EVENTS } from '../observe/counted-events.js'
import { HeldLeases } from '../observe/held-leases.js'

/**
 * The OpenTelemetry instruments of latchkey locks, attributed by `latchkey.lock.kind` and `latchkey.backend`
 * (and `latchkey.lock.name` when asked), fed one lock event at a time.
 */
export class LockInstruments {
  private readonly wait: Histogram
  private readonly hold: Histogram
  private readonly acquisitions: Counter
  private readonly counters: ReadonlyMap<string, Counter>
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
    this.counters = new Map(
      Object.entries(COUNTED_EVENTS).map(([type, c]) => [type, counter(`latchkey.lock.${c.name}`, c.help, c.unit)]),
    )
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
    if (event.type === 'acquired') {
      this.acquisitions.add(1, { ...attributes, 'latchkey.reentrant': event.reentrant })
      if (!event.reentrant) this.wait.record(event.waitedMs / 1000, attributes)
    } else if (event.type === 'released') {
      this.hold.record(event.heldMs / 1000, attributes)
    } else {
      const counted = this.counters.get(event.type)
      // A newer core may add event types: count them rather than fail.
      if (counted === undefined) this.other.add(1, { ...attributes, 'latchkey.event.type': String(event.type) })
      else counted.add(1, attributes)
    }
    if (change !== 0) this.held.add(change, attributes)
  }
}
