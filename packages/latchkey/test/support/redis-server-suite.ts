import { afterAll, beforeAll } from 'vitest'
import { type RedisServerProcess, startRedisServer } from './redis-server-process.js'

/**
 * A private redis-server for the tests of the file or `describe` block that calls this: started before them,
 * stopped and its directory removed after. The object returned stands for the server once `beforeAll` has run
 * (read `url` and `port` inside tests, or in functions they call).
 *
 * @example
 * const server = privateRedisServer()
 * it('survives a restart', async () => { await server.stop(); await server.start() })
 */
export function privateRedisServer(extraArgs: readonly string[] = []): RedisServerProcess {
  let server: RedisServerProcess | undefined
  beforeAll(async () => {
    server = await startRedisServer(extraArgs)
  })
  afterAll(async () => {
    await server?.dispose()
  })
  const started = (): RedisServerProcess => {
    if (server === undefined) throw new Error('privateRedisServer: not started yet (use it inside a test)')
    return server
  }
  return {
    get port() {
      return started().port
    },
    get url() {
      return started().url
    },
    start: () => started().start(),
    stop: () => started().stop(),
    dispose: () => started().dispose(),
  }
}
