/**
 * A process that opened a backend whose server never answered, tried once and closed it exits by itself. Before,
 * the Redis backend's close() sent QUIT to a client that had never connected: ioredis queued it behind its
 * reconnect timer, which kept the process alive forever. Each case runs the built package (`dist`) in a child.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { type ProcessOutput, runNodeProcess } from '../src/testing/node-process.js'
import { deadPort } from './support/dead-port.js'

const child = fileURLToPath(new URL('./support/open-dead-backend.mjs', import.meta.url))
const EXIT_WITHIN_MS = 15_000

/** Runs the child for `url`; resolves with its output once it exited by itself, rejects when it had to be killed. */
function runChild(url: string): Promise<ProcessOutput> {
  return runNodeProcess([child, url], EXIT_WITHIN_MS, `the process for ${url}, after close(),`)
}

describe('a backend whose server was never reachable lets the process exit after close()', () => {
  let port: number
  let other: number
  beforeAll(async () => {
    if (!existsSync(fileURLToPath(new URL('../dist/index.js', import.meta.url)))) {
      throw new Error('build the package first: npm run build')
    }
    port = await deadPort()
    other = await deadPort()
  })

  const cases: Array<[string, (p: number, q: number) => string, RegExp]> = [
    ['redis', (p) => `redis://127.0.0.1:${p}/0?commandTimeoutMs=500`, /BackendUnavailableError|CommandTimeoutError/],
    [
      'redis, database 3',
      (p) => `redis://127.0.0.1:${p}/3?commandTimeoutMs=500`,
      /BackendUnavailableError|CommandTimeoutError/,
    ],
    ['redlock', (p, q) => `redlock://127.0.0.1:${p},127.0.0.1:${q},127.0.0.1:${p}`, /QuorumNotReachedError/],
    [
      'zookeeper',
      (p) => `zookeeper://127.0.0.1:${p}?connectTimeoutMs=500&sessionTimeoutMs=2000`,
      /BackendUnavailableError/,
    ],
    ['etcd', (p) => `etcd://127.0.0.1:${p}?callTimeoutMs=500`, /BackendUnavailableError/],
    ['mysql', (p) => `mysql://root@127.0.0.1:${p}/test`, /BackendUnavailableError/],
    ['postgres', (p) => `postgres://postgres@127.0.0.1:${p}/test`, /BackendUnavailableError/],
  ]
  it.each(cases)('%s', async (_name, url, expected) => {
    const { code, out, err } = await runChild(url(port, other))
    expect(err).toBe('')
    expect(code).toBe(0)
    expect(out.trim()).toMatch(expected)
  })
})
