import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { APP_DIR } from '../src/fork.js'
import { type RedisServerProcess, startRedisServer } from './redis-server.js'
import { POSTGRES_URL, tempDir } from './support.js'

/** The password in every URL the service is given; it must show up nowhere. */
const PASSWORD = `s3cret-pw-${randomUUID().slice(0, 8)}`
const ADMIN = `admin-${randomUUID()}`

/** PIDs of the live children of `pid` (from /proc: the cluster's service workers). */
function childrenOf(pid: number): number[] {
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) children.push(Number(entry))
    } catch {
      // Gone meanwhile.
    }
  }
  return children
}

function cmdline(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
}

/** `flash-sale serve ...` as a child process, with everything it prints. */
interface Served {
  readonly child: ChildProcess
  readonly urls: string[]
  output(): string
  stop(): Promise<void>
}

async function serve(args: readonly string[], env: Record<string, string>): Promise<Served> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', ...args], {
    cwd: APP_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const urls = await new Promise<string[]>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString()
      const line = /flash-sale serving on ([^(]+) \(/.exec(output)
      if (line !== null) resolve((line[1] as string).trim().split(' '))
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    void exited.then(() => reject(new Error(`serve exited before serving: ${output}`)))
  })
  return {
    child,
    urls,
    output: () => output,
    async stop() {
      child.kill('SIGTERM')
      await exited
    },
  }
}

/** The service works with those passwords: a sale created with the admin token, an order placed. */
async function sellOne(url: string, strategy: 'lock' | 'reserve'): Promise<void> {
  const created = await fetch(`${url}/sales`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ item: 'phone', stock: 2, strategy }),
  })
  expect(created.status).toBe(201)
  const { id } = (await created.json()) as { id: string }
  const order = await fetch(`${url}/sales/${id}/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userId: 'u1', quantity: 1 }),
  })
  expect(order.status).toBe(201)
}

describe('secrets: passwords in the store, lock backend and Redis URLs, and the admin token, show nowhere', () => {
  const dir = tempDir()
  const database = `fs_secrets_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client(POSTGRES_URL)
    await client.connect()
    try {
      await client.query(sql)
    } finally {
      await client.end()
    }
  }
  let redis: RedisServerProcess
  let storeUrl: string

  beforeAll(async () => {
    redis = await startRedisServer({ password: PASSWORD })
    await admin(`CREATE DATABASE ${database}`)
    // PostgreSQL here trusts local connections: the password is sent and ignored, as a real one would be used.
    const url = new URL(POSTGRES_URL)
    url.password = PASSWORD
    url.pathname = `/${database}`
    storeUrl = url.href
  })
  afterAll(async () => {
    await redis?.dispose()
    await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    dir.remove()
  })

  it("cluster mode, URLs as flags: not in the start-up line, the output, or any worker's argv", async () => {
    expect(redis.url).toContain(PASSWORD)
    const served = await serve(
      ['--workers', '2', '--port', '0', '--store', storeUrl, '--backend', redis.url, '--redis', redis.url],
      { FLASH_SALE_ADMIN_TOKEN: ADMIN },
    )
    try {
      // Every child: the two service workers, and whatever else runs beside them (tsx's esbuild).
      const children = childrenOf(served.child.pid as number).map(cmdline)
      expect(children.filter((line) => line.includes('service-worker.ts'))).toHaveLength(2)
      for (const line of children) {
        expect(line).not.toContain(PASSWORD)
        expect(line).not.toContain(ADMIN)
      }
      expect(served.urls).toHaveLength(2)
      for (const url of served.urls) {
        await sellOne(url, 'lock')
        await sellOne(url, 'reserve')
      }
      // Still says where the servers are, with the password masked.
      expect(served.output()).toContain(`locks redis://:***@127.0.0.1:${redis.port}`)
    } finally {
      await served.stop()
    }
    expect(served.output()).not.toContain(PASSWORD)
    expect(served.output()).not.toContain(ADMIN)
  }, 60_000)

  it('one process, URLs and token from the environment: not in its argv or its output', async () => {
    const served = await serve(['--port', '0'], {
      FLASH_SALE_STORE: `sqlite:${join(dir.path, 'store.db')}`,
      FLASH_SALE_BACKEND: redis.url,
      FLASH_SALE_REDIS: redis.url,
      FLASH_SALE_ADMIN_TOKEN: ADMIN,
    })
    try {
      const pid = served.child.pid as number
      expect(cmdline(pid)).not.toContain(PASSWORD)
      expect(cmdline(pid)).not.toContain(ADMIN)
      await sellOne(served.urls[0] as string, 'lock')
      await sellOne(served.urls[0] as string, 'reserve')
      expect(served.output()).toContain(`reserve on redis://:***@127.0.0.1:${redis.port}`)
    } finally {
      await served.stop()
    }
    expect(served.output()).not.toContain(PASSWORD)
    expect(served.output()).not.toContain(ADMIN)
  }, 60_000)
})
