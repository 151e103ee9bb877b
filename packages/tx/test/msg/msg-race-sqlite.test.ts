/**
 * The check-back overlapping a slow local transaction on a SQLite producer: the producer (a child process)
 * holds its local transaction open (BEGIN IMMEDIATE, its order and barrier row written) and is stopped with
 * SIGSTOP; the coordinator in this process takes the message over and checks back through DTM's QueryPrepared
 * URL, served by a third process that opens the same file. That insert waits for the producer's write lock.
 * The producer resumes and commits or rolls back: the waiting check-back answers accordingly, once.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Coordinator, createCoordinator } from '../../src/index.js'
import { tempDir } from '../support/databases.js'
import { eventually } from '../support/eventually.js'
import { startProducer } from './msg-process.js'
import { createOrders, openProducerDb, type ProducerDb } from './producer-db.js'

const SERVER = fileURLToPath(new URL('./check-back-server.ts', import.meta.url))

describe('check-back racing a slow local transaction (sqlite, check-back over HTTP)', () => {
  const tmp = tempDir()
  const storeUrl = `sqlite:${tmp.dir}/tx.db`
  let p: ProducerDb
  let tc: Coordinator
  let server: ChildProcess
  const lines: string[] = []
  const calls: string[] = []

  beforeAll(async () => {
    p = openProducerDb('sqlite')
    await createOrders(p)
    const [, where] = p.spec.split(' ')
    server = spawn(process.execPath, ['--import', 'tsx', SERVER, where ?? '', p.barrierTable], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    createInterface({ input: server.stdout as NodeJS.ReadableStream }).on('line', (l) => lines.push(l))
    const port = await eventually(() => lines.find((l) => l.startsWith('listening '))?.slice(10), 20_000)
    tc = createCoordinator({ store: storeUrl, recoverEveryMs: 100, retry: { firstMs: 20, maxMs: 200, attempts: 50 } })
    tc.msg('order-created', { checkBack: `http://127.0.0.1:${port}/query-prepared`, barrierTable: p.barrierTable }).add(
      ({ gid }) => void calls.push(gid),
    )
  })
  afterEach(() => {
    lines.length = 1
  })
  afterAll(async () => {
    await tc?.close()
    if (server !== undefined && server.exitCode === null) {
      const gone = new Promise((resolve) => server.once('exit', resolve))
      server.kill('SIGTERM')
      await gone
    }
    await p?.drop()
    tmp.remove()
  })

  it.each(['commit', 'rollback'] as const)(
    'the producer resumes and decides to %s: the check-back answers that',
    async (decision) => {
      const gid = `${p.prefix}race-${decision}`
      const producer = startProducer(p.spec, storeUrl, gid, 'hold')
      try {
        await producer.waitFor('local-started')
        producer.child.kill('SIGSTOP')
        // Asked while the producer's transaction is open (its write lock held): the insert can only wait.
        await eventually(() => lines.includes(`asking ${gid}`), 20_000)
        expect(lines.some((l) => l.startsWith('answered'))).toBe(false)
        producer.child.kill('SIGCONT')
        producer.child.stdin?.write(`${decision}\n`)
        const done = await eventually(async () => {
          const tx = await tc.get(gid)
          return (tx?.status === 'succeeded' || tx?.status === 'failed') && tx
        }, 20_000)
        expect(await producer.exited).toBe('0')
        const outcome = decision === 'commit' ? 'committed' : 'rolled-back'
        expect(lines.filter((l) => l.startsWith('asking') || l.startsWith('answered'))).toEqual([
          `asking ${gid}`,
          `answered ${outcome}`,
        ])
        expect(done.branches.find((b) => b.id === 'local')).toMatchObject({ result: outcome, attempts: 1 })
        expect(done.status).toBe(decision === 'commit' ? 'succeeded' : 'failed')
        expect(calls.filter((c) => c === gid)).toHaveLength(decision === 'commit' ? 1 : 0)
        expect(await p.orders(gid)).toBe(decision === 'commit' ? 1 : 0)
        expect(producer.lines).not.toContain('branch-called')
      } finally {
        if (producer.child.exitCode === null && producer.child.signalCode === null) {
          producer.child.kill('SIGCONT')
          producer.child.kill('SIGKILL')
        }
      }
    },
  )
})
