/**
 * Server-side figures of Redis-based contenders: commands executed (INFO commandstats, including those run
 * inside Lua, excluding INFO itself) and server CPU, summed over the servers of a contender.
 */
import { Redis } from 'ioredis'

/** Counters at one instant. */
export interface ServerCounters {
  readonly calls: number
  readonly cpuMs: number
}

/** Admin connections to a contender's Redis servers. */
export class RedisProbe {
  private readonly admins: Redis[]

  constructor(urls: readonly string[]) {
    this.admins = urls.map((url) => {
      const c = new Redis(url, { maxRetriesPerRequest: 1 })
      c.on('error', () => undefined)
      return c
    })
  }

  get enabled(): boolean {
    return this.admins.length > 0
  }

  /** Summed counters now (NaN when there are no servers to read). */
  async read(): Promise<ServerCounters> {
    if (this.admins.length === 0) return { calls: Number.NaN, cpuMs: Number.NaN }
    const each = await Promise.all(this.admins.map((a) => countersOf(a)))
    return each.reduce((s, c) => ({ calls: s.calls + c.calls, cpuMs: s.cpuMs + c.cpuMs }), { calls: 0, cpuMs: 0 })
  }

  async close(): Promise<void> {
    await Promise.all(this.admins.map((a) => a.quit().catch(() => undefined)))
  }
}

async function countersOf(admin: Redis): Promise<ServerCounters> {
  const text = await admin.info('all')
  let calls = 0
  for (const m of text.matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)) if (m[1] !== 'info') calls += Number(m[2])
  const user = Number(/^used_cpu_user:([\d.]+)/m.exec(text)?.[1] ?? Number.NaN)
  const sys = Number(/^used_cpu_sys:([\d.]+)/m.exec(text)?.[1] ?? Number.NaN)
  return { calls, cpuMs: (user + sys) * 1000 }
}
