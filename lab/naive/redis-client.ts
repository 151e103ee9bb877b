import { Redis } from 'ioredis'
import { NAIVE_POLL_MS, NAIVE_WAIT_MS } from '../client/strategy.js'
import { sleep } from '../lib/clock.js'

/** An ioredis client for a naive strategy, from a `redis://host:port` URL. */
export function naiveRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: false })
}

/** Polls `tryOnce` until it wins or the naive wait runs out (these algorithms have no notification). */
export async function pollUntil(tryOnce: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + NAIVE_WAIT_MS
  while (Date.now() < deadline) {
    if (await tryOnce()) return
    await sleep(NAIVE_POLL_MS)
  }
  throw new Error(`${what}: not acquired within ${NAIVE_WAIT_MS} ms`)
}
