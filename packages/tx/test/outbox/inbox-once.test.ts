/**
 * inbox.once claims a message id by insert-ignore in the consumer's own transaction: the effect happens once per
 * id, a failed effect releases the id with its rollback, and two concurrent deliveries of one id produce one
 * effect (the second waits on the first's claim), on PostgreSQL, MariaDB and SQLite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createInbox, type Inbox } from '../../src/outbox/index.js'
import { DIALECTS } from '../support/databases.js'
import { type BusinessDb, openBusinessDb } from './business-db.js'
import { eventually, latch } from './wait.js'

describe.each(DIALECTS)('inbox.once (%s)', (dialect) => {
  let db: BusinessDb
  let inbox: Inbox

  beforeAll(async () => {
    db = openBusinessDb(dialect)
    inbox = createInbox({ store: db.store })
    await inbox.ready()
    await db.sql(`CREATE TABLE ${db.prefix}effects (message_id VARCHAR(64) NOT NULL, n INTEGER NOT NULL)`)
  })
  afterAll(async () => {
    await inbox.close()
    await db.drop(['effects', 'inbox'])
  })

  /** Consumes `id` in one transaction; the effect is a row in `effects`; `fail` throws after writing it. */
  const consume = (id: string, fail = false) =>
    db.tx((trx) => {
      const effect = () => {
        const wrote = db.inTx(trx, `INSERT INTO ${db.prefix}effects (message_id, n) VALUES (?, 1)`, [id])
        if (dialect === 'sqlite') {
          if (fail) throw new Error('consumer failed')
          return 'done'
        }
        return (async () => {
          await wrote
          if (fail) throw new Error('consumer failed')
          return 'done'
        })()
      }
      return inbox.once(trx, id, effect)
    })
  const effects = async (id: string) =>
    (await db.sql(`SELECT message_id FROM ${db.prefix}effects WHERE message_id = ?`, [id])).length

  it('runs the effect for the first delivery of an id and skips every later one', async () => {
    await expect(consume('m-1')).resolves.toEqual({ ran: true, value: 'done' })
    await expect(consume('m-1')).resolves.toEqual({ ran: false })
    await expect(consume('m-1')).resolves.toEqual({ ran: false })
    expect(await effects('m-1')).toBe(1)
  })

  it('releases the id when the effect fails, so the redelivery runs it', async () => {
    await expect(consume('m-2', true)).rejects.toThrow('consumer failed')
    expect(await effects('m-2')).toBe(0)
    await expect(consume('m-2')).resolves.toEqual({ ran: true, value: 'done' })
    expect(await effects('m-2')).toBe(1)
  })

  it('checks its arguments before any I/O', () => {
    expect(() => inbox.once({}, 'x', () => 1)).toThrow(/trx must be/)
    expect(() => inbox.once({ query() {}, processID: 1 }, '', () => 1)).toThrow(/messageId/)
  })
})

describe.each(['postgres', 'mysql'] as const)('inbox.once, two deliveries of one id at once (%s)', (dialect) => {
  let db: BusinessDb
  let inbox: Inbox

  beforeAll(async () => {
    db = openBusinessDb(dialect)
    inbox = createInbox({ store: db.store })
    await inbox.ready()
    await db.sql(`CREATE TABLE ${db.prefix}effects (message_id VARCHAR(64) NOT NULL)`)
  })
  afterAll(async () => {
    await inbox.close()
    await db.drop(['effects', 'inbox'])
  })

  /**
   * Whether the second claim is on the server and not done: a fresh insert-ignore returns at once, so one still
   * running waits on the first delivery's row lock. (MariaDB's information_schema.innodb_trx was seen to stall
   * for seconds under load from other tests, so the process list is read instead.)
   */
  const someoneWaits = async () => {
    const sql =
      dialect === 'postgres'
        ? `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ?`
        : `SELECT id FROM information_schema.processlist WHERE command = 'Query' AND info LIKE ?`
    return (await db.sql(sql, [`%INTO ${db.prefix}inbox%`])).length > 0
  }

  it.each([
    ['commits', false, { ran: false }, 1],
    ['rolls back', true, { ran: true, value: 'second' }, 1],
  ])('the second waits for the first, which %s, then the effect exists once', async (_, firstFails, second, total) => {
    const id = `race-${String(firstFails)}`
    const inFirst = latch()
    const finishFirst = latch()
    const first = db.tx((trx) =>
      inbox.once(trx, id, async () => {
        await db.inTx(trx, `INSERT INTO ${db.prefix}effects (message_id) VALUES (?)`, [id])
        inFirst.open()
        await finishFirst.wait()
        if (firstFails) throw new Error('first consumer failed')
        return 'first'
      }),
    )
    await inFirst.wait()
    const secondRun = db.tx((trx) =>
      inbox.once(trx, id, async () => {
        await db.inTx(trx, `INSERT INTO ${db.prefix}effects (message_id) VALUES (?)`, [id])
        return 'second'
      }),
    )
    await eventually('the second delivery to wait on the first one’s claim', someoneWaits)
    finishFirst.open()
    if (firstFails) await expect(first).rejects.toThrow('first consumer failed')
    else await expect(first).resolves.toEqual({ ran: true, value: 'first' })
    await expect(secondRun).resolves.toEqual(second)
    expect((await db.sql(`SELECT message_id FROM ${db.prefix}effects WHERE message_id = ?`, [id])).length).toBe(total)
  })
})
