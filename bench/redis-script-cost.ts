/**
 * What each uncontended Redis lock script costs the server, beside SET NX PX and DEL: pipelines of acquires on
 * distinct keys, then of their releases, against a redis-server at REDIS_URL (default a private one on 6679:
 * `redis-server --port 6679 --save '' --appendonly no --daemonize yes`), INFO commandstats reset before each phase,
 * so usec_per_call of EVALSHA (or of the bare command) is that script's own time in the server. Prints the
 * median [min–max] over rounds, per phase.
 *
 *   npx tsx bench/redis-script-cost.ts [rounds] [keys per round]      (defaults 7 2000)
 *
 * BEFORE_DIST=<another build's dist directory> adds that build's short scripts; LUA_VARIANTS=name:acquire.lua:release.lua,...
 * adds candidate scripts from files (no --#include). Medians hide the shared machine's preemptions badly: read the
 * minimum too.
 */
import { readFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import { SCRIPTS } from '../packages/latchkey/src/backends/redis/scripts/index.js'

const [roundsArg, keysArg] = process.argv.slice(2)
const rounds = Number(roundsArg ?? 7)
const keyCount = Number(keysArg ?? 2000)
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6679')

interface Phase {
  /** The command of one key's call: [name, ...args]. */
  call(i: number): (string | number)[]
}
interface Variant {
  acquire: Phase
  release: Phase
}

const field = (i: number) => `0f8c2d3e-6a1b-4c5d-9e7f-${String(i).padStart(12, '0')}`
const k = (v: string, i: number) => `cost-${v}:{u${i}}`
const sha = async (lua: string) => (await redis.script('LOAD', lua)) as string

const FLOOR_TAKE =
  "local n = redis.call('INCR', KEYS[2]) if redis.call('SET', KEYS[1], n, 'NX', 'PX', ARGV[1]) then return n end return 0"
const FLOOR_GIVE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
// redis-semaphore 5.8's release (src/mutex/release.ts).
const SEM_GIVE = `local key = KEYS[1]
local identifier = ARGV[1]
if redis.call('get', key) == identifier then
  return redis.call('del', key)
end
return 0`

const variants: Record<string, Variant> = {}
async function setup(): Promise<void> {
  const take = await sha(FLOOR_TAKE)
  const give = await sha(FLOOR_GIVE)
  const semGive = await sha(SEM_GIVE)
  const lkTake = await sha(SCRIPTS.acquireMutex.source)
  const lkGive = await sha(SCRIPTS.releaseMutex.source)
  const lkTakeKeep = await sha(SCRIPTS.acquireMutexKeepFence.source)
  variants['SET NX PX / DEL'] = {
    acquire: { call: (i) => ['set', k('raw', i), field(i), 'NX', 'PX', 10000] },
    release: { call: (i) => ['del', k('raw', i)] },
  }
  variants['redis-semaphore: SET NX PX / script'] = {
    acquire: { call: (i) => ['set', k('sem', i), field(i), 'NX', 'PX', 10000] },
    release: { call: (i) => ['evalsha', semGive, 1, k('sem', i), field(i)] },
  }
  variants['fenced floor'] = {
    acquire: { call: (i) => ['evalsha', take, 2, k('floor', i), `${k('floor', i)}:fence`, 10000] },
    // The token each key holds is the counter's value: read back from the acquire phase's replies.
    release: { call: (i) => ['evalsha', give, 1, k('floor', i), String(floorTokens[i])] },
  }
  variants['latchkey acquire-mutex / release-mutex'] = {
    acquire: { call: (i) => ['evalsha', lkTake, 2, k('lk', i), `${k('lk', i)}:fence`, field(i), 10000] },
    release: { call: (i) => ['evalsha', lkGive, 1, k('lk', i), field(i)] },
  }
  // What a process sends on a lock it took within the last fenceIdleTtlMs / 8: no PEXPIRE of the counter.
  variants['latchkey, counter expiry kept'] = {
    acquire: { call: (i) => ['evalsha', lkTakeKeep, 2, k('lkk', i), `${k('lkk', i)}:fence`, field(i), 10000] },
    release: { call: (i) => ['evalsha', lkGive, 1, k('lkk', i), field(i)] },
  }
  const before = process.env.BEFORE_DIST
  if (before !== undefined) {
    const { SCRIPTS: old } = (await import(`${before}/backends/redis/scripts/index.js`)) as { SCRIPTS: typeof SCRIPTS }
    const [a, r] = await Promise.all([sha(old.acquireMutex.source), sha(old.releaseMutex.source)])
    variants['latchkey (BEFORE_DIST)'] = {
      acquire: { call: (i) => ['evalsha', a, 2, k('before', i), `${k('before', i)}:fence`, field(i), 10000] },
      release: {
        call: (i) => [
          'evalsha',
          r,
          3,
          k('before', i),
          `${k('before', i)}:expiry`,
          `${k('before', i)}:watchers`,
          field(i),
        ],
      },
    }
  }
  for (const [name, lua] of Object.entries(extraVariants())) {
    const [a, r] = await Promise.all([sha(lua.acquire), sha(lua.release)])
    const releaseKeys = (i: number) =>
      lua.releaseKeys === 1 ? [k(name, i)] : [k(name, i), `${k(name, i)}:expiry`, `${k(name, i)}:watchers`]
    variants[name] = {
      acquire: { call: (i) => ['evalsha', a, 2, k(name, i), `${k(name, i)}:fence`, field(i), 10000] },
      release: { call: (i) => ['evalsha', r, lua.releaseKeys, ...releaseKeys(i), field(i)] },
    }
  }
}
const floorTokens: unknown[] = []

/**
 * Candidate scripts under study, from files named in LUA_VARIANTS=name:acquire.lua:release.lua[:1],... (`:1`: the
 * release takes M alone, else M, E and W as release-mutex.lua).
 */
function extraVariants(): Record<string, { acquire: string; release: string; releaseKeys: 1 | 3 }> {
  const out: Record<string, { acquire: string; release: string; releaseKeys: 1 | 3 }> = {}
  for (const spec of (process.env.LUA_VARIANTS ?? '').split(',').filter(Boolean)) {
    const [name, a, r, keys] = spec.split(':') as [string, string, string, string?]
    out[name] = {
      acquire: `local FENCE_IDLE_MS, FENCE_REFRESH = 86400000, true\n${readFileSync(a, 'utf8')}`,
      release: `local FENCE_IDLE_MS, FENCE_REFRESH = 86400000, true\n${readFileSync(r, 'utf8')}`,
      releaseKeys: keys === '1' ? 1 : 3,
    }
  }
  return out
}

async function phase(p: Phase): Promise<Map<string, number>> {
  await redis.config('RESETSTAT')
  const pipe = redis.pipeline()
  for (let i = 0; i < keyCount; i++) {
    const [cmd, ...args] = p.call(i)
    pipe.call(cmd as string, ...args)
  }
  const results = (await pipe.exec()) ?? []
  if (p === variants['fenced floor']?.acquire)
    results.forEach(([, v], i) => {
      floorTokens[i] = v
    })
  const bad = results.find(([e]) => e !== null)
  if (bad) throw bad[0]
  const info = (await redis.info('commandstats')) as string
  const out = new Map<string, number>()
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/gm))
    out.set(m[1] as string, Number(m[3]) / Number(m[2]))
  return out
}

await setup()
const samples = new Map<string, { acquire: number[]; release: number[]; detail: string }>()
for (let r = 0; r < rounds + 1; r++) {
  for (const [name, v] of Object.entries(variants)) {
    const a = await phase(v.acquire)
    const rel = await phase(v.release)
    const top = (m: Map<string, number>) => {
      const own = ['evalsha', 'set', 'del'].find((c) => m.has(c)) as string
      return m.get(own) as number
    }
    if (r === 0) continue // warm-up
    const s = samples.get(name) ?? { acquire: [], release: [], detail: '' }
    s.acquire.push(top(a))
    s.release.push(top(rel))
    const fmt = (m: Map<string, number>) =>
      [...m]
        .filter(([c]) => c !== 'config')
        .map(([c, u]) => `${c} ${u.toFixed(2)}`)
        .join(', ')
    s.detail = `acquire: ${fmt(a)}; release: ${fmt(rel)}`
    samples.set(name, s)
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const f = (xs: number[]) =>
  `${med(xs).toFixed(2)} min ${Math.min(...xs).toFixed(2)} [${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}]`
console.log(`| contender | acquire µs/call | release µs/call | sum | inner calls µs/call (last round) |`)
console.log('| --- | --- | --- | --- | --- |')
for (const [name, s] of samples)
  console.log(
    `| ${name} | ${f(s.acquire)} | ${f(s.release)} | ${(med(s.acquire) + med(s.release)).toFixed(2)} (min ${(Math.min(...s.acquire) + Math.min(...s.release)).toFixed(2)}) | ${s.detail} |`,
  )
redis.disconnect()
