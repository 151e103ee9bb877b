/**
 * A relay in its own process, for the kill -9 tests: `node --import tsx relay-child.ts` with STORE, EXCHANGE,
 * PARTITIONS and LEASE_TTL_MS in the environment (and LATCHKEY_TX_CRASH_AT to die at a crash point). Prints one
 * JSON line per relay event; exits on SIGTERM after closing the relay.
 */
import { createOutbox, rabbitPublisher } from '../../src/outbox/index.js'
import { RABBIT_URL } from './rabbit.js'

const env = (name: string) => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`relay-child: ${name} is not set`)
  return value
}

const outbox = createOutbox({ store: env('STORE'), partitions: Number(env('PARTITIONS')) })
const relay = outbox.relay({
  publisher: rabbitPublisher({ url: RABBIT_URL, exchange: env('EXCHANGE') }),
  pollMs: 20,
  batchSize: 8,
  leaseTtlMs: Number(env('LEASE_TTL_MS')),
  onEvent: (event) => {
    const { type } = event
    const detail = event.type === 'error' ? { error: event.error.message } : event
    process.stdout.write(`${JSON.stringify({ ...detail, type })}\n`)
  },
})
process.on('SIGTERM', () => {
  void relay.close().then(() => outbox.close())
})
