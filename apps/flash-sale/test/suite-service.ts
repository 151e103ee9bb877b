import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll } from 'vitest'
import { startInstances, tempDir } from './support.js'

/**
 * One in-process service (memory lock backend, SQLite store in a temporary folder) for the tests of the
 * `describe` block that calls this: started before them, closed and its folder removed after. Returns a
 * getter, since the service exists only once `beforeAll` has run.
 *
 * @example
 * const app = serviceForSuite()
 * it('answers', async () => expect((await app().inject({ url: '/healthz' })).statusCode).toBe(200))
 */
export function serviceForSuite(): () => FastifyInstance {
  const dir = tempDir()
  let started: Awaited<ReturnType<typeof startInstances>> | undefined
  beforeAll(async () => {
    started = await startInstances(dir.path, 'memory', 1)
  })
  afterAll(async () => {
    await started?.close()
    dir.remove()
  })
  return () => {
    const instance = started?.instances[0]
    if (instance === undefined) throw new Error('serviceForSuite: the service has not started (read it inside a test)')
    return instance.app
  }
}
