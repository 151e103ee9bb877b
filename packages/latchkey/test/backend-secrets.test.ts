/**
 * A password in a backend URL never reaches what the library shows: error messages, their `cause` chains and
 * `onEvent` payloads, whatever went wrong (a bad part, an unknown scheme or option, an unreachable server, bad
 * credentials, a refused database, a password with characters that end the URL's authority early).
 */
import { inspect } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { backendFromUrl } from '../src/backend-url.js'
import type { LockEvent } from '../src/core/events.js'
import { createLocks } from '../src/core/locks.js'
import { deadPort } from './support/dead-port.js'

const PW = 's3cret-pw-XYZ'

/** Every message, stack and own property reachable from `value`, through `cause` and `errors`. */
function shown(value: unknown): string {
  const parts: string[] = [inspect(value, { depth: 8, showHidden: false }), String(value)]
  const seen = new Set<unknown>()
  for (let e = value; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e)
    parts.push(e.message, e.stack ?? '')
    for (const inner of (e as { errors?: unknown[] }).errors ?? []) parts.push(shown(inner))
  }
  return parts.join('\n')
}

/** Opens `url`, tries one lock with a short wait (collecting events) and closes; returns all it showed. */
async function everythingShown(url: string): Promise<string> {
  const out: string[] = []
  let backend: Awaited<ReturnType<typeof backendFromUrl>>
  try {
    backend = await backendFromUrl(url)
  } catch (error) {
    return shown(error)
  }
  const events: LockEvent[] = []
  const locks = createLocks({ backend, namespace: `secrets-${process.pid}`, onEvent: (e) => events.push(e) })
  try {
    const lease = await locks.mutex('probe').acquire({ waitMs: 400 })
    await lease.release()
  } catch (error) {
    out.push(shown(error))
  } finally {
    await locks.close()
    await backend.close()
  }
  for (const event of events)
    out.push(
      shown(event),
      JSON.stringify(event, (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
    )
  return out.join('\n')
}

describe(`no error, cause or event shows the URL's password`, () => {
  let dead: number
  beforeAll(async () => {
    dead = await deadPort()
  })

  const cases: Array<[string, (dead: number) => string]> = [
    ['unknown scheme', () => `foo://u:${PW}@127.0.0.1:1`],
    ['redis: bad port', () => `redis://:${PW}@127.0.0.1:abc/0`],
    ['rediss: port 0', () => `rediss://u:${PW}@127.0.0.1:0/0`],
    ['redis: unknown option', () => `redis://:${PW}@127.0.0.1:6379/0?stratgy=x`],
    ['redis: bad database path', () => `redis://:${PW}@127.0.0.1:6379/x`],
    ['redis: unreachable', (d) => `redis://:${PW}@127.0.0.1:${d}/0?commandTimeoutMs=300`],
    ['redis: refused database', () => `redis://:${PW}@127.0.0.1:6379/99`],
    ['redis: "/" in the password', () => `redis://:${PW}/x@127.0.0.1:6379/0`],
    ['redlock: bad port', () => `redlock://:${PW}@127.0.0.1:6381,127.0.0.1:70000`],
    ['redlock: unknown option', () => `redlock://:${PW}@127.0.0.1:6381?quorom=2`],
    ['redlock: unreachable', (d) => `redlock://:${PW}@127.0.0.1:${d},127.0.0.1:${d + 1},127.0.0.1:${d}`],
    ['zookeeper: credentials', () => `zookeeper://digest:${PW}@127.0.0.1:2181`],
    ['zookeeper: bad port', () => `zookeeper://u:${PW}@127.0.0.1:abc/app`],
    ['etcd: credentials', () => `etcd://root:${PW}@127.0.0.1:2379`],
    ['etcd: unknown option', () => `etcd://root:${PW}@127.0.0.1:2379?prefx=a`],
    ['mysql: bad port', () => `mysql://root:${PW}@127.0.0.1:/test`],
    ['mysql: unknown option', () => `mysql://root:${PW}@127.0.0.1:3306/test?stratgy=table`],
    ['mysql: unreachable', (d) => `mysql://root:${PW}@127.0.0.1:${d}/test?connectTimeoutMs=500`],
    ['mysql: bad credentials', () => `mysql://latchkey_nouser_${process.pid}:${PW}@127.0.0.1:3306/test`],
    ['mysql: "#" in the password', () => `mysql://root:${PW}#x@127.0.0.1:3306/test`],
    ['postgres: bad port', () => `postgres://postgres:${PW}@127.0.0.1:99999/test`],
    ['postgres: password as a query option', (d) => `postgres://postgres@127.0.0.1:${d}/test?password=${PW}`],
    ['postgres: unreachable', (d) => `postgres://postgres:${PW}@127.0.0.1:${d}/test?connectTimeoutMs=500`],
    ['postgres: unknown role', () => `postgres://latchkey_nouser_${process.pid}:${PW}@127.0.0.1:5432/test`],
    ['postgres: unknown database', () => `postgresql://postgres:${PW}@127.0.0.1:5432/latchkey_nodb_${process.pid}`],
    ['postgres: "?" in the password', () => `postgres://postgres:${PW}?x@127.0.0.1:5432/test`],
  ]
  it.each(cases)('%s', async (_name, url) => {
    const text = await everythingShown(url(dead))
    expect(text.length).toBeGreaterThan(0)
    expect(text).not.toContain(PW)
  })
})
