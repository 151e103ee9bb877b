/**
 * Leader election across OS processes on the real servers (and one SQLite file): 5 participant processes contend for one election; the
 * leader is killed with SIGKILL (a successor within 2 x TTL), the next one closes (a successor at once, by the
 * release), then all close and exit by themselves. Every leader writes its token to a Redis referee (a fence key)
 * while it leads: no write of a term that still runs may be refused for a higher token (never two leaders at once),
 * and terms' tokens increase in the order they were won.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Etcd3 } from 'etcd3'
import { afterAll, describe, expect, it } from 'vitest'
import { KeyLayout } from '../src/backends/etcd/keys.js'
import { eventually } from '../src/testing/eventually.js'
import { ETCD_URL } from './support/etcd-backend-module.js'
import { allLines, currentLeader, type Participant, startParticipant } from './support/leader-processes.js'
import type { LeaderLine } from './support/leader-worker.js'
import { deleteKeys, ioredisClient, REDIS_URL, unlinkMatching } from './support/redis-backend-module.js'
import { cleanupMysql, cleanupPostgres } from './support/sql-backends.js'
import { cleanupNamespace, zkUrl } from './support/zookeeper-env.js'

const support = (file: string): string => fileURLToPath(new URL(`./support/${file}`, import.meta.url))

/** Lease length of each term: a killed leader's successor must follow within twice this. */
const TTL_MS = 3_000

async function cleanupEtcd(namespace: string): Promise<void> {
  const admin = new Etcd3({ hosts: ETCD_URL })
  try {
    const range = new KeyLayout('latchkey').namesRange(namespace)
    await admin.kv.deleteRange({ key: range.start, range_end: range.end })
  } finally {
    admin.close()
  }
}

// The SQLite participants open one file, named by the environment their processes inherit.
const sqliteDir = mkdtempSync(join(tmpdir(), 'latchkey-leader-'))
process.env.LATCHKEY_SQLITE_PATH = join(sqliteDir, 'locks.db')
afterAll(() => rmSync(sqliteDir, { recursive: true, force: true }))

const backends: ReadonlyArray<
  readonly [name: string, module: string, exportName: string, cleanup: (ns: string) => Promise<void>]
> = [
  ['redis', support('redis-backend-module.ts'), 'createIoredisBackend', deleteKeys],
  ['zookeeper', support('zookeeper-backend-module.ts'), 'createBackend', (ns) => cleanupNamespace(zkUrl(), ns)],
  ['etcd', support('etcd-backend-module.ts'), 'createBackend', cleanupEtcd],
  ['postgres (table)', support('sql-backends.ts'), 'createPostgresTable', cleanupPostgres],
  ['mysql (table)', support('sql-backends.ts'), 'createMysqlTable', cleanupMysql],
  ['sqlite', support('sqlite-backend-module.ts'), 'createBackend', async () => undefined],
]

const lastOf = (p: Participant, type: LeaderLine['type']): LeaderLine | undefined =>
  p.lines.filter((l) => l.type === type).at(-1)

describe.each(backends)('leader election across 5 OS processes: %s', (name, module, exportName, cleanup) => {
  it('kill -9 the leader: a successor within 2 x TTL; close() hands over at once; never two leaders; tokens increase', async () => {
    const namespace = `lk-leader-${randomUUID().slice(0, 8)}`
    const fencePrefix = `${namespace}:referee:`
    const participants = Array.from({ length: 5 }, (_, i) =>
      startParticipant({
        module,
        export: exportName,
        namespace,
        name: 'election',
        id: `p${i}`,
        ttlMs: TTL_MS,
        redisUrl: REDIS_URL,
        fencePrefix,
      }),
    )
    const stillRunning = () => participants.filter((p) => p.child.exitCode === null && p.child.signalCode === null)
    try {
      // Process start-up (tsx, client libraries) takes seconds on a loaded machine: wait for what they print.
      await eventually(
        'all 5 participants ready and one elected',
        () => participants.every((p) => lastOf(p, 'ready')) && currentLeader(participants) !== undefined,
        90_000,
      )
      const killed = currentLeader(participants) as Participant
      const killedToken = BigInt(lastOf(killed, 'elected')?.token ?? '0')
      const killedAt = Date.now()
      killed.child.kill('SIGKILL')
      expect(await killed.exited).toBe('SIGKILL')
      const successorOf = (token: bigint) =>
        allLines(participants).find((l) => l.type === 'elected' && BigInt(l.token ?? '0') > token)
      await eventually('a successor of the killed leader', () => successorOf(killedToken) !== undefined, 30_000)
      const successor = successorOf(killedToken) as LeaderLine
      const takeoverMs = successor.at - killedAt
      expect(successor.id).not.toBe(killed.id)
      expect(takeoverMs).toBeLessThan(2 * TTL_MS)

      // close() on the leader: its term ends, the lock is released, and a waiter is woken by the release.
      await eventually('a leader after the takeover', () => currentLeader(participants) !== undefined, 30_000)
      const closing = currentLeader(participants) as Participant
      const closingToken = BigInt(lastOf(closing, 'elected')?.token ?? '0')
      closing.child.stdin?.write('close\n')
      expect(await closing.exited).toBe(0)
      await eventually('a successor of the closed leader', () => successorOf(closingToken) !== undefined, 30_000)
      const revokedAt = lastOf(closing, 'revoked')?.at ?? Number.NaN
      const handoverMs = (successorOf(closingToken) as LeaderLine).at - revokedAt
      // A successor woken by the release, not by the lease running out (at least 2/3 of a TTL after a renewal).
      expect(handoverMs).toBeLessThan(TTL_MS / 2)
      console.info(
        `${name}: takeover after kill -9 ${takeoverMs} ms (TTL ${TTL_MS}), handover on close ${handoverMs} ms`,
      )

      for (const p of stillRunning()) p.child.stdin?.write('close\n')
      const codes = await Promise.all(participants.map((p) => p.exited))
      expect(codes.filter((c) => c === 0)).toHaveLength(4)

      const lines = allLines(participants)
      expect(lines.filter((l) => l.type === 'overlap')).toEqual([])
      // Terms were won in token order, each with a higher token than the one before.
      const won = lines.filter((l) => l.type === 'elected').map((l) => BigInt(l.token ?? '0'))
      // The first leader, the killed one's successor, the closed one's successor (the last three close together).
      expect(won.length).toBeGreaterThanOrEqual(3)
      for (let i = 1; i < won.length; i++) expect((won[i] as bigint) > (won[i - 1] as bigint)).toBe(true)
      // Each participant's events alternate elected, revoked, ... (the killed one ends elected).
      for (const p of participants) {
        const events = p.lines.filter((l) => l.type === 'elected' || l.type === 'revoked').map((l) => l.type)
        expect(events).toEqual(events.map((_, i) => (i % 2 === 0 ? 'elected' : 'revoked')))
        if (p !== killed) expect(events.length % 2).toBe(0)
      }
    } finally {
      for (const p of stillRunning()) p.child.kill('SIGKILL')
      await Promise.all(participants.map((p) => p.exited))
      await cleanup(namespace)
      const redis = ioredisClient()
      await unlinkMatching(redis, [`${fencePrefix}*`])
      await redis.quit()
      if (participants.some((p) => p.stderr !== '')) console.error(participants.map((p) => p.stderr).join('\n'))
    }
  }, 240_000)
})
