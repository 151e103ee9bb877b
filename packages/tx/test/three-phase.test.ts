/**
 * Three-phase commit in one process: `threePhaseParticipant`'s state machine on each database (repeated and
 * out-of-order messages, its own timeouts, a restart), `tc.threePhase` over in-process participants, and the
 * argument checks. The crash and partition cases with real processes are in `three-phase-crash.test.ts`.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  type ThreePhaseParticipantHandle,
  type ThreePhaseParticipantOptions,
  ThreePhaseRefusal,
  threePhaseParticipant,
} from '../src/index.js'
import { sqliteHarness } from './support/coordinators.js'
import { DIALECTS, type Dialect, MYSQL_URL, POSTGRES_URL, tempDir, uniquePrefix } from './support/databases.js'
import { eventually } from './support/eventually.js'

type Input = { n: number }

/** A participant database with an account table, on one dialect. */
function participantDb(dialect: Dialect) {
  const prefix = uniquePrefix('l3pc')
  const acct = `${prefix}acct`
  const table = `${prefix}state`
  const tmp = dialect === 'sqlite' ? tempDir() : undefined
  const db =
    dialect === 'sqlite'
      ? new Database(join(tmp?.dir ?? '', 'p.db'))
      : dialect === 'postgres'
        ? new pg.Pool({ connectionString: POSTGRES_URL, max: 4 })
        : mysql.createPool({ uri: MYSQL_URL, connectionLimit: 4 })
  const exec = async (trx: unknown, sql: string): Promise<Record<string, unknown>[]> => {
    if (dialect === 'sqlite') {
      const s = (trx as Database.Database).prepare(sql)
      if (s.reader) return s.all() as Record<string, unknown>[]
      s.run()
      return []
    }
    if (dialect === 'postgres') return (await (trx as pg.Pool).query(sql)).rows
    const [rows] = await (trx as mysql.Pool).query(sql)
    return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
  }
  return {
    db,
    table,
    exec,
    async setup() {
      await exec(db, `CREATE TABLE ${acct} (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL, pending INTEGER NOT NULL)`)
      await exec(db, `INSERT INTO ${acct} VALUES (1, 100, 0)`)
    },
    async account() {
      const [row] = await exec(db, `SELECT bal, pending FROM ${acct} WHERE id = 1`)
      return { bal: Number(row?.bal), pending: Number(row?.pending) }
    },
    /** The business functions: preCommit holds n, doCommit applies it, abort releases it. */
    functions(calls: string[]): Omit<ThreePhaseParticipantOptions<Input>, 'db'> {
      const move =
        (op: string, sql: (n: number) => string) => async (trx: unknown, ctx: { input: Input; by: string }) => {
          calls.push(ctx.by === 'timeout' ? `${op} by timeout` : op)
          await exec(trx, sql(ctx.input.n))
        }
      return {
        table,
        preCommit: move('preCommit', (n) => `UPDATE ${acct} SET pending = pending + ${n} WHERE id = 1`),
        doCommit: move('doCommit', (n) => `UPDATE ${acct} SET bal = bal + ${n}, pending = pending - ${n} WHERE id = 1`),
        abort: move('abort', (n) => `UPDATE ${acct} SET pending = pending - ${n} WHERE id = 1`),
      }
    },
    async drop() {
      await exec(db, `DROP TABLE IF EXISTS ${acct}`)
      await exec(db, `DROP TABLE IF EXISTS ${table}`)
      if (dialect === 'sqlite') {
        ;(db as Database.Database).close()
        tmp?.remove()
      } else await (db as pg.Pool | mysql.Pool).end()
    },
  }
}

describe.each(DIALECTS)('threePhaseParticipant on %s', (dialect) => {
  let d: ReturnType<typeof participantDb>
  const started: ThreePhaseParticipantHandle<Input>[] = []
  const start = async (options: Partial<ThreePhaseParticipantOptions<Input>>, calls: string[]) => {
    const p = threePhaseParticipant<Input>({
      db: d.db,
      timeoutMs: 60_000,
      checkEveryMs: 60_000,
      ...d.functions(calls),
      ...options,
    })
    await p.start()
    started.push(p)
    return p
  }
  const msg = (gid: string, op: string) => ({ gid, branch: 'p', op, input: { n: 30 } })

  beforeAll(async () => {
    d = participantDb(dialect)
    await d.setup()
  })
  afterEach(async () => {
    for (const p of started.splice(0)) await p.close()
  })
  afterAll(async () => {
    await d?.drop()
  })

  it('answers each message from its stored state: repeated messages apply once', async () => {
    const calls: string[] = []
    const p = await start({}, calls)
    const gid = `ok-${dialect}`
    for (const op of ['canCommit', 'canCommit', 'preCommit', 'preCommit']) await p.handle(msg(gid, op))
    expect(await d.account()).toEqual({ bal: 100, pending: 30 })
    expect(await p.handle(msg(gid, 'doCommit'))).toEqual({ state: 'committed', decidedBy: 'coordinator' })
    expect(await p.handle(msg(gid, 'doCommit'))).toEqual({ state: 'committed', decidedBy: 'coordinator' })
    expect(calls).toEqual(['preCommit', 'doCommit'])
    expect(await d.account()).toEqual({ bal: 130, pending: 0 })
    // An abort after the commit changes nothing and says what happened.
    expect(await p.handle(msg(gid, 'abort'))).toEqual({ state: 'committed', decidedBy: 'coordinator' })
    expect(await d.account()).toEqual({ bal: 130, pending: 0 })
    await d.exec(d.db, `UPDATE ${d.table.replace(/state$/, 'acct')} SET bal = 100 WHERE id = 1`)
  })

  it('an abort before canCommit is remembered: the late canCommit votes no, a late preCommit is refused', async () => {
    const calls: string[] = []
    const p = await start({}, calls)
    const gid = `early-abort-${dialect}`
    expect(await p.handle(msg(gid, 'abort'))).toEqual({ state: 'aborted', decidedBy: 'coordinator' })
    await expect(p.handle(msg(gid, 'canCommit'))).rejects.toBeInstanceOf(ThreePhaseRefusal)
    await expect(p.handle(msg(gid, 'preCommit'))).rejects.toMatchObject({ code: 'TX_3PC_REFUSED' })
    expect(calls).toEqual([])
    // A doCommit to an aborted participant reports it (the coordinator calls that a mixed outcome).
    expect(await p.handle(msg(gid, 'doCommit'))).toEqual({ state: 'aborted', decidedBy: 'coordinator' })
  })

  it('a no vote is stored and repeated; nothing is held', async () => {
    const calls: string[] = []
    const p = await start({ canCommit: (_trx, ctx) => ctx.input.n < 10 }, calls)
    const gid = `no-${dialect}`
    await expect(p.handle(msg(gid, 'canCommit'))).rejects.toThrow(/votes no/)
    await expect(p.handle(msg(gid, 'canCommit'))).rejects.toThrow(/refused/)
    expect((await p.state(gid, 'p'))?.state).toBe('refused')
    expect(calls).toEqual([])
    expect(await d.account()).toEqual({ bal: 100, pending: 0 })
  })

  it('acts alone on its timeout, also after a restart: voted → aborted, pre-committed → committed', async () => {
    const calls: string[] = []
    const first = await start({ timeoutMs: 150 }, calls)
    await first.handle(msg(`alone-voted-${dialect}`, 'canCommit'))
    await first.handle(msg(`alone-pre-${dialect}`, 'canCommit'))
    await first.handle(msg(`alone-pre-${dialect}`, 'preCommit'))
    // The participant process goes away before its deadlines; the next one finds them in its database.
    await first.close()
    const second = await start({ timeoutMs: 150, checkEveryMs: 20 }, calls)
    await eventually(async () => (await second.state(`alone-pre-${dialect}`, 'p'))?.state === 'committed', 10_000)
    await eventually(async () => (await second.state(`alone-voted-${dialect}`, 'p'))?.state === 'aborted', 10_000)
    expect(await second.state(`alone-pre-${dialect}`, 'p')).toMatchObject({ decidedBy: 'timeout' })
    expect(await second.state(`alone-voted-${dialect}`, 'p')).toMatchObject({ decidedBy: 'timeout' })
    expect(calls).toEqual(['preCommit', 'doCommit by timeout'])
    expect(await d.account()).toEqual({ bal: 130, pending: 0 })
    // The coordinator's late doCommit finds it committed; a late abort hears that it committed on its own.
    expect(await second.handle(msg(`alone-pre-${dialect}`, 'doCommit'))).toEqual({
      state: 'committed',
      decidedBy: 'timeout',
    })
    expect(await second.handle(msg(`alone-pre-${dialect}`, 'abort'))).toEqual({
      state: 'committed',
      decidedBy: 'timeout',
    })
    expect(calls).toEqual(['preCommit', 'doCommit by timeout'])
  })
})

describe('tc.threePhase in process', () => {
  let h: ReturnType<typeof sqliteHarness>
  let d: ReturnType<typeof participantDb>
  const started: ThreePhaseParticipantHandle<Input>[] = []
  beforeEach(async () => {
    h = sqliteHarness()
    d = participantDb('sqlite')
    await d.setup()
  })
  afterEach(async () => {
    for (const p of started.splice(0)) await p.close()
    await h.close()
    await d.drop()
  })
  const participant = async (calls: string[], options: Partial<ThreePhaseParticipantOptions<Input>> = {}) => {
    const p = threePhaseParticipant<Input>({ db: d.db, ...d.functions(calls), ...options })
    await p.start()
    started.push(p)
    return p
  }

  it('votes, logs the preCommit decision, pre-commits, logs the commit decision, commits', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const p = await participant(calls)
    // Two branches on one participant database (its state is per gid and branch).
    const r = await tc.threePhase<Input>('pay', { x: p.branch(), y: p.branch() }).run({ n: 5 })
    expect(r.status).toBe('succeeded')
    expect(calls).toEqual(['preCommit', 'preCommit', 'doCommit', 'doCommit'])
    expect(await d.account()).toEqual({ bal: 110, pending: 0 })
    const tx = await tc.get(r.gid)
    expect(tx?.kind).toBe('3pc')
    const types = tx?.history
      .filter((e) => e.type !== 'branch-start')
      .map((e) => (e.op === null ? e.type : `${e.branch}/${e.op}`))
    expect(types).toEqual([
      'created',
      'x/canCommit',
      'y/canCommit',
      'pre-commit',
      'x/preCommit',
      'y/preCommit',
      'submitted',
      'x/doCommit',
      'y/doCommit',
      'succeeded',
    ])
    expect((await tc.list({ kind: '3pc' })).map((t) => t.gid)).toEqual([r.gid])
  })

  it('a failed preCommit aborts every participant; the pre-committed one releases what it held', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const p = await participant(calls)
    const refusing = {
      ...p.branch(),
      preCommit: () => {
        throw new Error('disk full')
      },
    }
    const r = await tc.threePhase<Input>('pay', { x: p.branch(), y: refusing }).run({ n: 5 })
    expect(r.status).toBe('failed')
    expect(r.error?.message).toMatch(/preCommit of "y" got no yes: disk full/)
    expect(calls).toEqual(['preCommit', 'abort'])
    expect(await d.account()).toEqual({ bal: 100, pending: 0 })
  })

  it('a doCommit answered "aborted" (a participant that gave up on its own) is logged as a mixed outcome', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const p = await participant(calls)
    const gaveUp = { ...p.branch(), doCommit: () => ({ state: 'aborted', decidedBy: 'timeout' }) }
    const r = await tc.threePhase<Input>('pay', { x: p.branch(), y: gaveUp }).run({ n: 5 })
    // The decision was commit and stays so; the log carries the error and the event for a human.
    expect(r.status).toBe('succeeded')
    const tx = await tc.get(r.gid)
    expect(tx?.error).toMatch(/mixed \(heuristic\) outcome: x committed while y aborted/)
    expect(tx?.history.map((e) => e.type)).toContain('heuristic-mixed')
    expect(h.events.some((e) => e.type === 'heuristic-mixed' && e.gid === r.gid)).toBe(true)
  })

  it('tc.abort refuses a 3PC past its commit decision (a parked doCommit): it can only be retried', async () => {
    const tc = h.coordinator()
    const calls: string[] = []
    const p = await participant(calls)
    const down = {
      ...p.branch(),
      doCommit: () => {
        throw new Error('participant down')
      },
    }
    const r = await tc.threePhase<Input>('pay', { x: down }).run({ n: 5 })
    expect(r.status).toBe('parked')
    expect((await tc.get(r.gid))?.parkedFrom).toBe('submitted')
    await expect(tc.abort(r.gid)).rejects.toMatchObject({ code: 'NOT_ABORTABLE' })
  })

  it('checks its arguments before any I/O', async () => {
    const tc = h.coordinator()
    expect(() => tc.threePhase('bad name!', {})).toThrow(RangeError)
    expect(() => tc.threePhase('t', {})).toThrow(/needs participants/)
    expect(() => tc.threePhase('t2', { x: { canCommit: () => true } as never })).toThrow(/preCommit must be a function/)
    expect(() => threePhaseParticipant({} as never)).toThrow(/preCommit must be a function/)
    const fns = { preCommit: () => undefined, doCommit: () => undefined }
    expect(() => threePhaseParticipant({ db: d.db, ...fns, timeoutMs: 0 })).toThrow(RangeError)
    expect(() => threePhaseParticipant({ db: d.db, ...fns, table: 'x; DROP' })).toThrow(RangeError)
    expect(() => threePhaseParticipant({ db: {}, ...fns })).toThrow(TypeError)
    const p = await participant([])
    await expect(p.handle({ gid: 'g', branch: 'p', op: 'commit' })).rejects.toThrow(RangeError)
  })
})
