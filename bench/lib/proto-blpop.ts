/**
 * The research's wake-one prototype ("proto-blpop", research/redis-bench.md sections 2-3), the floor the
 * Redis speed targets were derived from. Acquire = `SET key token NX PX ttl`; a waiter that fails BLPOPs
 * the lock's signal list on a blocking connection of its own, then tries the SET again. Release = one
 * script: token check, DEL, LPUSH one signal trimmed to 1 (so Redis wakes exactly one waiter, FIFO), PEXPIRE
 * of the list. A BLPOP timeout of at most {@link FALLBACK_MS} covers lost signals and expired holders.
 *
 * Connections: one shared command connection per process, and a per-process pool of blocking ones, each
 * lent to one waiter for one BLPOP (so as many as the process has waiters blocked at once, like the
 * research's one connection per waiting waiter, without reconnecting per wait).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import type { Contender, Held } from './contender.js'

/** Longest a waiter blocks before trying the SET again on its own. */
const FALLBACK_MS = 1_000

const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('LPUSH', KEYS[2], '1')
redis.call('LTRIM', KEYS[2], 0, 0)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1`

type Commands = Redis & {
  protoBlpopRelease(key: string, signal: string, token: string, ttlMs: number): Promise<number>
}

function connect(url: string): Redis {
  const c = new Redis(url)
  c.on('error', () => undefined)
  return c
}

/** Blocking connections lent to one BLPOP at a time. */
class BlockingPool {
  private readonly idle: Redis[] = []
  private readonly all: Redis[] = []

  constructor(private readonly url: string) {}

  /** Waits up to `ms` for a signal on `list`. */
  async wait(list: string, ms: number): Promise<void> {
    const c = this.idle.pop() ?? this.open()
    try {
      await c.blpop(list, Math.max(0.001, ms / 1000))
    } finally {
      this.idle.push(c)
    }
  }

  private open(): Redis {
    const c = connect(this.url)
    this.all.push(c)
    return c
  }

  close(): void {
    for (const c of this.all) c.disconnect()
  }
}

/** Opens the prototype on `url`; keys are `ns:name` and the signal list `ns:name:signal`. */
export function protoBlpop(url: string, ns: string, ttlMs: number): Contender {
  const c = connect(url) as Commands
  c.defineCommand('protoBlpopRelease', { numberOfKeys: 2, lua: RELEASE })
  const blocking = new BlockingPool(url)
  const signals = new Set<string>()

  const tryLock = async (key: string, signal: string): Promise<Held | undefined> => {
    const token = randomUUID()
    if ((await c.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') return undefined
    return { release: () => c.protoBlpopRelease(key, signal, token, ttlMs) }
  }

  return {
    async acquire(name, waitMs) {
      const key = `${ns}:${name}`
      const signal = `${key}:signal`
      signals.add(signal)
      const deadline = performance.now() + waitMs
      for (;;) {
        const held = await tryLock(key, signal)
        if (held !== undefined) return held
        const left = deadline - performance.now()
        if (left <= 0) return undefined
        await blocking.wait(signal, Math.min(FALLBACK_MS, left))
      }
    },
    async close() {
      blocking.close()
      if (signals.size > 0) await c.unlink(...signals)
      await c.quit()
    },
  }
}
