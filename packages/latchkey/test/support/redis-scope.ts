/**
 * What a Redis backend test file on the shared server opens (backends, clients of their own, lock names), closed
 * and deleted after each test: every key of a name (`latchkey:{name}*`), so nothing is left on the server.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach } from 'vitest'
import { type RedisBackend, redisBackend } from '../../src/backends/redis/index.js'
import { ioredisClient } from './redis-backend-module.js'

type Client = ReturnType<typeof ioredisClient>

export interface RedisScope {
  /** The file's shared client: for reading the server's state, and for backends that need no client of their own. */
  readonly client: Client
  /** A client of its own (another process, as far as Redis can tell), quit after the test. */
  ownClient(): Client
  /** A backend on `on` (a client of its own unless given), closed after the test. */
  backend(on?: Client): RedisBackend
  /** A fresh lock name starting with `prefix`, whose keys are deleted after the test. */
  lockName(prefix?: string): string
}

/** Registers the file's cleanup hooks; call it once, at the top of the file. */
export function redisScope(defaultPrefix: string): RedisScope {
  const client = ioredisClient()
  const opened: RedisBackend[] = []
  const clients: Client[] = []
  const names: string[] = []
  afterEach(async () => {
    for (const b of opened.splice(0)) await b.close()
    for (const c of clients.splice(0)) await c.quit()
    for (const name of names.splice(0)) {
      const keys = await client.keys(`latchkey:{${name}}*`)
      if (keys.length > 0) await client.del(...keys)
    }
  })
  afterAll(async () => {
    await client.quit()
  })
  const ownClient = (): Client => {
    const own = ioredisClient()
    clients.push(own)
    return own
  }
  return {
    client,
    ownClient,
    backend(on = ownClient()) {
      const b = redisBackend({ client: on }) as RedisBackend
      opened.push(b)
      return b
    },
    lockName(prefix = defaultPrefix) {
      const name = `${prefix}-${randomUUID()}`
      names.push(name)
      return name
    },
  }
}
