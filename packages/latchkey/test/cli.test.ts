/**
 * The `latchkey` CLI, run as the built bin (`bin/latchkey.js` over `dist`) in a child process against the real
 * servers, once per backend URL scheme. This process holds a lock through a backend opened from the same URL; the
 * CLI, a process of its own, sees it (inspect, list, watch) and breaks it (release), and the holder's
 * `lease.signal` aborts.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { Etcd3 } from 'etcd3'
import { afterAll, describe, expect, it } from 'vitest'
import type { Backend } from '../src/backend/types.js'
import { backendFromUrl } from '../src/backend-url.js'
import { KeyLayout } from '../src/backends/etcd/keys.js'
import { main } from '../src/cli/main.js'
import { createLocks } from '../src/core/locks.js'
import { LockLostError } from '../src/errors.js'
import { abortedWithin } from '../src/testing/env.js'
import { eventually } from '../src/testing/eventually.js'
import { ETCD_URL } from './support/etcd-backend-module.js'
import { deleteKeys, REDIS_URL } from './support/redis-backend-module.js'
import { deleteRedlockKeys, REDLOCK_URLS } from './support/redlock-backend-module.js'
import { cleanupMysql, cleanupPostgres, MYSQL_URL, POSTGRES_URL } from './support/sql-backends.js'
import { cleanupNamespace, zkUrl } from './support/zookeeper-env.js'

const BIN = fileURLToPath(new URL('../bin/latchkey.js', import.meta.url))
const BUILT = fileURLToPath(new URL('../dist/cli/run.js', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'latchkey-cli-'))
const hostsOf = (urls: readonly string[]) => urls.map((u) => new URL(u).host).join(',')

async function cleanupEtcd(namespace: string): Promise<void> {
  const admin = new Etcd3({ hosts: ETCD_URL })
  const range = new KeyLayout('latchkey').namesRange(namespace)
  await admin.kv.deleteRange({ key: range.start, range_end: range.end })
  admin.close()
}

interface Scheme {
  readonly label: string
  readonly url: string
  readonly cleanup: (namespace: string) => Promise<void>
  /** The server knows sessions, not owner ids: a holder in another process shows as `session:<id>`. */
  readonly sessions?: boolean
}

const SCHEMES: readonly Scheme[] = [
  { label: 'redis', url: REDIS_URL, cleanup: deleteKeys },
  { label: 'redis, redisson layout', url: `${REDIS_URL}?layout=redisson`, cleanup: deleteKeys },
  { label: 'redlock', url: `redlock://${hostsOf(REDLOCK_URLS)}`, cleanup: (ns) => deleteRedlockKeys(ns) },
  {
    label: 'zookeeper',
    url: `zookeeper://${zkUrl()}`,
    cleanup: (ns) => cleanupNamespace(zkUrl(), ns),
  },
  { label: 'zk', url: `zk://${zkUrl()}`, cleanup: (ns) => cleanupNamespace(zkUrl(), ns) },
  { label: 'etcd', url: `etcd://${new URL(ETCD_URL).host}`, cleanup: cleanupEtcd },
  { label: 'mysql table', url: MYSQL_URL, cleanup: cleanupMysql },
  {
    label: 'mysql get_lock',
    url: `${MYSQL_URL}?strategy=get_lock`,
    cleanup: cleanupMysql,
    sessions: true,
  },
  { label: 'postgres table', url: POSTGRES_URL, cleanup: cleanupPostgres },
  {
    label: 'postgres advisory',
    url: `${POSTGRES_URL}?strategy=advisory`,
    cleanup: cleanupPostgres,
    sessions: true,
  },
  { label: 'sqlite', url: `sqlite:${join(dir, 'locks.db')}`, cleanup: async () => undefined },
]

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the bin to completion; stdin is a pipe (not a TTY). */
function cli(...args: string[]): Promise<Run> {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run npm run build first`)
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
      resolve({ code, stdout, stderr })
    })
  })
}

function json<T>(run: Run): T {
  expect(run.stderr).toBe('')
  expect(run.code).toBe(0)
  return JSON.parse(run.stdout) as T
}

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe.each(SCHEMES)('latchkey CLI on $label', (scheme) => {
  const namespace = `lkcli-${randomUUID().slice(0, 8)}`
  let backend: Backend | undefined
  const open = async () => {
    backend ??= await backendFromUrl(scheme.url.replace(/^zk:/, 'zookeeper:'))
    return backend
  }
  afterAll(async () => {
    await backend?.close()
    await scheme.cleanup(namespace)
  })

  it('inspect shows the holder, list finds it, release refuses without --yes and then breaks it', async () => {
    const locks = createLocks({ backend: await open(), namespace })
    const lease = await locks.mutex('job').acquire({ ttlMs: 3_000 })
    try {
      const state = json<{ kind: string; holders: { owner: string; kind: string; token?: string }[] }>(
        await cli('inspect', scheme.url, 'job', '--namespace', namespace, '--json'),
      )
      expect(state.kind).toBe('mutex')
      expect(state.holders).toHaveLength(1)
      const [holder] = state.holders
      if (scheme.sessions === true) expect(holder?.owner).toMatch(/^session:\d+$/)
      else expect(holder?.owner === lease.owner || holder?.owner.startsWith(`${lease.owner}:`)).toBe(true)
      if (locks.backend.capabilities.fencing === 'native') expect(holder?.token).toBe(lease.token.toString())

      const text = await cli('inspect', scheme.url, 'job', '--namespace', namespace)
      expect(text.code).toBe(0)
      expect(text.stdout).toContain('lock "job": mutex')
      expect(text.stdout).toMatch(/OWNER\s+KIND\s+TOKEN\s+EXPIRES IN\s+COUNT/)

      if (locks.backend.capabilities.list) {
        const listed = json<{ name: string; holders: number }[]>(
          await cli('list', scheme.url, '--namespace', namespace, '--json'),
        )
        expect(listed).toEqual([{ name: 'job', kind: 'mutex', holders: 1, waiters: 0 }])
      } else {
        const refused = await cli('list', scheme.url, '--namespace', namespace)
        expect(refused.code).toBe(1)
        expect(refused.stderr).toContain('cannot list locks')
      }

      const unconfirmed = await cli('release', scheme.url, 'job', '--namespace', namespace)
      expect(unconfirmed.code).toBe(2)
      expect(unconfirmed.stderr).toContain('--yes')
      expect(lease.signal.aborted).toBe(false)

      const released = json<{ released: boolean; holders: number }>(
        await cli('release', scheme.url, 'job', '--namespace', namespace, '--yes', '--json'),
      )
      expect(released).toMatchObject({ released: true, holders: 1 })
      expect(await abortedWithin(lease.signal, 8_000)).toBeInstanceOf(LockLostError)
      const after = json<{ holders: unknown[] }>(
        await cli('inspect', scheme.url, 'job', '--namespace', namespace, '--json'),
      )
      expect(after.holders).toEqual([])
    } finally {
      await lease.release().catch(() => undefined)
      await locks.close()
    }
  })

  it('watch prints the holder coming and going, and stops on SIGINT', async () => {
    const locks = createLocks({ backend: await open(), namespace })
    let child: ChildProcess | undefined
    try {
      const lines: { change: string; owner: string; kind: string }[] = []
      child = spawn(process.execPath, [
        BIN,
        'watch',
        scheme.url,
        'w',
        '--namespace',
        namespace,
        '--json',
        '--interval-ms',
        '50',
      ])
      let buffered = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        buffered += chunk.toString()
        const parts = buffered.split('\n')
        buffered = parts.pop() ?? ''
        for (const line of parts) if (line !== '') lines.push(JSON.parse(line))
      })
      const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)))
      const lease = await locks.mutex('w').acquire({ ttlMs: 5_000 })
      const owner = scheme.sessions === true ? undefined : lease.owner
      await eventually(
        'watch printed the holder',
        () =>
          lines.some(
            (l) => l.change === 'held' && (owner === undefined || l.owner === owner || l.owner.startsWith(`${owner}:`)),
          ),
        15_000,
      )
      await lease.release()
      await eventually('watch printed the release', () => lines.some((l) => l.change === 'released'), 15_000)
      child.kill('SIGINT')
      expect(await exited).toBe(0)
    } finally {
      if (child?.exitCode === null) child.kill('SIGKILL')
      await locks.close()
    }
  })
})

describe('latchkey CLI: bench and usage', () => {
  it('bench prints an uncontended and a contended run', async () => {
    for (const url of [`sqlite:${join(dir, 'bench.db')}`, 'memory:']) {
      const { results } = json<{
        results: { phase: string; acquisitions: number; perSecond: number; p99Ms: number }[]
      }>(await cli('bench', url, '--duration-ms', '200', '--concurrency', '3', '--json'))
      expect(results.map((r) => r.phase)).toEqual(['uncontended', 'contended'])
      for (const r of results) {
        expect(r.acquisitions).toBeGreaterThan(0)
        expect(r.p99Ms).toBeGreaterThanOrEqual(0)
      }
    }
    const text = await cli('bench', 'memory:', '--duration-ms', '100')
    expect(text.stdout).toMatch(/PHASE\s+ACQUIRERS\s+ACQUISITIONS\s+PER SECOND\s+P50 MS\s+P99 MS/)
  })

  it('bad usage exits 2 with a clear message and no stack; a password never shows', async () => {
    const cases: [string[], RegExp][] = [
      [['frob'], /unknown command "frob"/],
      [[], /usage:/],
      [['inspect'], /needs a backend URL/],
      [['inspect', REDIS_URL], /needs a lock name/],
      [['inspect', 'bogus://x', 'a'], /unknown backend URL scheme "bogus:"/],
      [['inspect', 'redis://127.0.0.1:99999', 'a'], /port/],
      [['inspect', 'memory:', 'a'], /memory: locks live inside one process/],
      [['list', REDIS_URL, '--limit', '0'], /--limit must be a whole number >= 1/],
      [['list', REDIS_URL, '--bogus'], /Unknown option '--bogus'/],
      [['inspect', 'mysql://root:s3cret@127.0.0.1:3306/test?nope=1', 'a'], /nope/],
    ]
    for (const [args, message] of cases) {
      const run = await cli(...args)
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).toMatch(message)
      expect(run.stderr).not.toMatch(/\n\s+at /)
      expect(run.stderr).not.toContain('s3cret')
    }
    // A backend that cannot be reached: exit 1, the password hidden.
    const down = await cli('inspect', 'postgres://postgres:s3cret@127.0.0.1:1/test', 'a')
    expect(down.code).toBe(1)
    expect(down.stderr).not.toContain('s3cret')
    expect(down.stderr).not.toMatch(/\n\s+at /)
  })
})

describe('latchkey release on a terminal', () => {
  /** A stdin that says it is a terminal and answers `answer`. */
  const terminal = (answer: string) => {
    const input = new PassThrough() as PassThrough & { isTTY?: boolean }
    input.isTTY = true
    input.end(answer)
    return input
  }
  const sink = () => {
    const stream = new PassThrough()
    let text = ''
    stream.on('data', (chunk: Buffer) => {
      text += chunk.toString()
    })
    return { stream, text: () => text }
  }

  it('asks first: "n" keeps the lock (exit 1), "y" releases it', async () => {
    const url = `sqlite:${join(dir, 'tty.db')}`
    const namespace = `lkcli-${randomUUID().slice(0, 8)}`
    const backend = await backendFromUrl(url)
    const locks = createLocks({ backend, namespace })
    const lease = await locks.mutex('job').acquire({ ttlMs: 1_000 })
    try {
      const [out, err] = [sink(), sink()]
      const no = await main(['release', url, 'job', '--namespace', namespace], {
        stdin: terminal('n\n'),
        out: out.stream,
        err: err.stream,
      })
      expect(no).toBe(1)
      expect(err.text()).toContain(`Force-release lock "job" on ${url} (held by ${lease.owner}; 0 waiting)?`)
      expect(err.text()).toContain('not released')
      expect(lease.signal.aborted).toBe(false)
      const yes = await main(['release', url, 'job', '--namespace', namespace], {
        stdin: terminal('y\n'),
        out: out.stream,
        err: sink().stream,
      })
      expect(yes).toBe(0)
      expect(out.text()).toContain('released "job": dropped 1 holder(s) and 0 waiter(s)')
      expect(await abortedWithin(lease.signal, 3_000)).toBeInstanceOf(LockLostError)
    } finally {
      await lease.release().catch(() => undefined)
      await locks.close()
      await backend.close()
    }
  })
})
