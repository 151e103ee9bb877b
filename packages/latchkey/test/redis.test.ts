import { fileURLToPath } from 'node:url'
import { describeBackendConformance } from '../src/testing/index.js'
import { createIoredisBackend, createNodeRedisBackend, deleteKeys } from './support/redis-backend-module.js'

const module = fileURLToPath(new URL('./support/redis-backend-module.ts', import.meta.url))

/**
 * The suite's leases are 90-150 ms, renewed every third of that; on a loaded 2-core machine a renewal
 * round trip occasionally takes longer than the slack, so every duration is doubled (Redis is not slow).
 */
const timeScale = 2

describeBackendConformance('redis (ioredis)', () => createIoredisBackend(), {
  processBackend: { module, export: 'createIoredisBackend' },
  cleanup: deleteKeys,
  timeScale,
})

describeBackendConformance('redis (node-redis)', () => createNodeRedisBackend(), {
  processBackend: { module, export: 'createNodeRedisBackend' },
  cleanup: deleteKeys,
  timeScale,
})

describeBackendConformance('redis (ioredis, redisson layout)', () => createIoredisBackend({ layout: 'redisson' }), {
  processBackend: { module, export: 'createRedissonBackend' },
  cleanup: deleteKeys,
  timeScale,
})
