/**
 * etcd fault tests: the server stopped and restarted under a held lease with waiters (on a private etcd member,
 * 127.0.0.1:23790/23800, started and stopped here so other tests are unaffected), and a holder paused past its
 * lease whose late writes are rejected by a fence guard and by an etcd txn guard.
 */
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { createInterface, type Interface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Etcd3 } from 'etcd3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { etcdBackend } from '../src/backends/etcd/index.js'
import { KeyLayout } from '../src/backends/etcd/keys.js'
import type { LockEvent } from '../src/core/events.js'
import { createLocks } from '../src/core/locks.js'
import { BackendUnavailableError, NotLockHolderError, StaleTokenError } from '../src/errors.js'
import { createFenceGuard } from '../src/fence/index.js'
import { refusalLog } from '../src/testing/refusal-log.js'
import { ETCD_URL } from './support/etcd-backend-module.js'
import { eventually } from './support/eventually.js'

const run = promisify(execFile)
const script = fileURLToPath(new URL('../../../scripts/servers/etcd.sh', import.meta.url))
const PORT = 23790
const PRIVATE_URL = `http://127.0.0.1:${PORT}`
const privateEnv = { ...process.env, LATCHKEY_ETCD_PORT: String(PORT), LATCHKEY_ETCD_PEER_PORT: '23800' }
const server = (command: 'start' | 'stop') => run('bash', [script, command], { env: privateEnv, timeout: 60_000 })
const namespace = `lk-faults-${process.pid}`

async function deleteNamespace(url: string): Promise<void> {
  const admin = new Etcd3({ hosts: url })
  try {
    const range = new KeyLayout('latchkey').namesRange(namespace)
    await admin.kv.deleteRange({ key: range.start, range_end: range.end })
    await admin.delete().key(`${namespace}/resource`)
  } finally {
    admin.close()
  }
}

describe('etcd backend faults', () => {
  describe('server restart (private etcd member)', () => {
    beforeAll(() => server('start'), 60_000)
    afterAll(async () => {
      await server('stop')
      await rm(fileURLToPath(new URL(`../../../.data/etcd/${PORT}`, import.meta.url)), { recursive: true, force: true })
    }, 60_000)

    it('a holder survives a short outage and hands over; a longer one loses the lease before a waiter gets it', async () => {
      const backends = [0, 1, 2].map(() => etcdBackend({ hosts: PRIVATE_URL, callTimeoutMs: 500 }))
      const events: LockEvent[] = []
      const logs = backends.map((backend) => refusalLog(backend))
      const [a, b, c] = logs.map(({ backend }) => createLocks({ backend, namespace, onEvent: (e) => events.push(e) }))
      if (a === undefined || b === undefined || c === undefined) throw new Error('unreachable')
      const waiting = () => logs.reduce((n, log) => n + log.refusedOwners(`${namespace}:m`), 0)
      const renewedAgain = () =>
        events.findLastIndex((e) => e.type === 'renewed') > events.findLastIndex((e) => e.type === 'renew-failed')
      try {
        // Phase 1: an outage (stop ~2 s + start ~1 s) shorter than the lease. Renewals fail, then get through again.
        const first = await a.mutex('m').acquire({ ttlMs: 6_000 })
        const second = b.mutex('m').acquire({ waitMs: 60_000, ttlMs: 2_000 })
        let secondAt = Number.POSITIVE_INFINITY
        // Settled here so a failing assertion below never leaves an unhandled rejection behind.
        second.then(
          () => {
            secondAt = performance.now()
          },
          () => {},
        )
        await eventually('the second waits', () => waiting() === 1)
        await server('stop')
        await expect(c.mutex('elsewhere').tryAcquire()).rejects.toBeInstanceOf(BackendUnavailableError)
        await eventually('a renewal failed', () => events.some((e) => e.type === 'renew-failed'), 5_000)
        await server('start')
        await eventually('a renewal got through again', renewedAgain, 10_000)
        expect(first.signal.aborted).toBe(false)
        expect(events.some((e) => e.type === 'renew-failed')).toBe(true)
        expect(secondAt).toBe(Number.POSITIVE_INFINITY)
        const handedAt = performance.now()
        await first.release()
        const held = await second
        expect(secondAt).toBeGreaterThanOrEqual(handedAt)
        expect(held.token > first.token).toBe(true)

        // Phase 2: an outage longer than the holder's lease: its signal aborts before anyone else acquires.
        let lostAt = Number.POSITIVE_INFINITY
        held.signal.addEventListener('abort', () => {
          lostAt = performance.now()
        })
        let nextAt = Number.NEGATIVE_INFINITY
        const third = c.mutex('m').acquire({ waitMs: 60_000 })
        third.then(
          () => {
            nextAt = performance.now()
          },
          () => {},
        )
        await eventually('the third waits', () => waiting() === 2)
        await server('stop')
        await eventually("the holder's lease ran out", () => held.signal.aborted, 10_000)
        await server('start')
        const next = await third
        // The old holder was told it lost the lock before the new one got it.
        expect(lostAt).toBeLessThan(nextAt)
        expect(next.token > held.token).toBe(true)
        await expect(held.release()).rejects.toBeInstanceOf(NotLockHolderError)
        await next.release()
      } finally {
        await Promise.all([a, b, c].map((locks) => locks.close()))
        await Promise.all(backends.map((backend) => backend.close()))
        await deleteNamespace(PRIVATE_URL)
      }
    }, 60_000)
  })

  it('a holder paused past its lease loses it; its late writes are rejected by the fence and the txn guard', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('./support/etcd-paused-holder.ts', import.meta.url))].concat([
        ETCD_URL,
        namespace,
        'paused',
        '1000',
      ]),
      { stdio: ['pipe', 'pipe', 'pipe'] },
    )
    const lines = createInterface({ input: child.stdout })
    const backend = etcdBackend({ hosts: ETCD_URL })
    const locks = createLocks({ backend, namespace })
    const admin = new Etcd3({ hosts: ETCD_URL })
    try {
      const { token } = JSON.parse(await nextLine(lines, child)) as { token: string }
      const childToken = BigInt(token)
      child.kill('SIGSTOP')
      const fence = createFenceGuard()
      const mine = await locks.mutex('paused').acquire({ waitMs: 10_000 })
      expect(mine.token > childToken).toBe(true)
      await fence.admit('paused', mine.token)
      const guard = await backend.holderGuard({ key: `${namespace}:paused`, kind: 'mutex', token: mine.token })
      const put = { request_put: { key: Buffer.from(`${namespace}/resource`), value: Buffer.from('parent') } }
      expect((await admin.kv.txn({ compare: [guard.compare], success: [put] })).succeeded).toBe(true)

      child.kill('SIGCONT')
      child.stdin.write('write\n')
      const late = JSON.parse(await nextLine(lines, child)) as { txnSucceeded: boolean }
      expect(late.txnSucceeded).toBe(false)
      await expect(fence.admit('paused', childToken)).rejects.toBeInstanceOf(StaleTokenError)
      expect((await admin.get(`${namespace}/resource`).string()) ?? '').toBe('parent')
      await mine.release()
      expect(await exitCode(child)).toBe(0)
    } finally {
      child.kill('SIGCONT')
      child.kill('SIGKILL')
      lines.close()
      await locks.close()
      await backend.close()
      admin.close()
      await deleteNamespace(ETCD_URL)
    }
  }, 30_000)
})

function nextLine(lines: Interface, child: ChildProcessWithoutNullStreams): Promise<string> {
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => {
    stderr += d
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line from the child within 15 s: ${stderr}`)), 15_000)
    lines.once('line', (line) => {
      clearTimeout(timer)
      resolve(line)
    })
    child.once('exit', (code) => reject(new Error(`child exited with ${code}: ${stderr}`)))
  })
}

function exitCode(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
}
