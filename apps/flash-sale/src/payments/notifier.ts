/**
 * The `notifier` process: consumes the order-created events the coordinator's outbox relay publishes to RabbitMQ
 * and "sends" one notification per order (a row in its own SQLite database). Delivery is at least once (a relay
 * killed between publish and mark sends again, an unacked message is redelivered); `inbox.once` in the same
 * transaction as the notification makes the effect happen once per message. Every delivery is also counted, so
 * the audit shows duplicates that arrived and were absorbed.
 */
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib'
import Database from 'better-sqlite3'
import Fastify, { type FastifyInstance } from 'fastify'
import { createInbox } from 'latchkey-tx/outbox'
import { adminGuard, checkAdminToken } from '../server/admin-auth.js'
import { ORDER_CREATED } from './order-ledger.js'

/** Options of {@link startNotifier}. */
export interface NotifierOptions {
  /** The notifier's own database, `sqlite:PATH`. */
  readonly dbUrl: string
  readonly rabbitUrl: string
  /** Exchange the relay publishes to (declared here, topic, durable). */
  readonly exchange: string
  /** This consumer's queue (declared here, durable, bound to `order.created`). */
  readonly queue: string
  readonly host?: string
  readonly port?: number
  readonly adminToken?: string
}

/** What the "every event consumed once" invariant needs. */
export interface NotifierAudit {
  /** Deliveries received (duplicates included). */
  readonly deliveries: number
  /** The notifications sent, one row per effect. */
  readonly notifications: ReadonlyArray<{ readonly orderId: string; readonly messageId: string }>
}

/** A running notifier. */
export interface RunningNotifier {
  readonly url: string
  close(): Promise<void>
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS fs_notifications (order_id TEXT NOT NULL, message_id TEXT NOT NULL, sent_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS fs_deliveries (message_id TEXT PRIMARY KEY, count INTEGER NOT NULL);`

/**
 * Declares the exchange and the queue, then consumes; reconnects after a lost connection.
 *
 * @example
 * const n = await startNotifier({ dbUrl: 'sqlite:./notify.db', rabbitUrl: 'amqp://127.0.0.1', exchange: 'fs', queue: 'fs-notify' })
 */
export async function startNotifier(options: NotifierOptions): Promise<RunningNotifier> {
  checkAdminToken(options.adminToken)
  if (!/^sqlite:/.test(options.dbUrl)) throw new RangeError('payments: the notifier database must be sqlite:PATH')
  const db = new Database(options.dbUrl.slice('sqlite:'.length).replace(/^\/\//, ''))
  db.pragma('busy_timeout = 10000')
  db.pragma('journal_mode = WAL')
  // WAL + NORMAL: a commit survives a killed process (kill -9), not a power cut; FULL's fsync per commit
  // made each charge wait on the disk, and the service runs its charges one at a time.
  db.pragma('synchronous = NORMAL')
  db.exec(SCHEMA)
  const inbox = createInbox({ store: options.dbUrl })
  const delivered = db.prepare(
    'INSERT INTO fs_deliveries (message_id, count) VALUES (?, 1) ON CONFLICT (message_id) DO UPDATE SET count = count + 1',
  )
  const notify = db.prepare('INSERT INTO fs_notifications (order_id, message_id, sent_at) VALUES (?, ?, ?)')
  const consume = (channel: Channel, msg: ConsumeMessage | null): void => {
    if (msg === null) return
    const messageId = String(msg.properties.messageId)
    try {
      const { orderId } = JSON.parse(msg.content.toString()) as { orderId: string }
      db.transaction(() => {
        delivered.run(messageId)
        // Synchronous on SQLite: the claim and the notification commit (or roll back) with this transaction.
        void inbox.once(db, messageId, () => notify.run(orderId, messageId, Date.now()))
      })()
      channel.ack(msg)
    } catch {
      channel.nack(msg, false, true)
    }
  }
  let connection: ChannelModel | undefined
  let closing = false
  const connect = async (): Promise<void> => {
    const conn = await amqp.connect(options.rabbitUrl, { clientProperties: { connection_name: 'flash-sale-notifier' } })
    const channel = await conn.createChannel()
    await channel.assertExchange(options.exchange, 'topic', { durable: true })
    await channel.assertQueue(options.queue, { durable: true })
    await channel.bindQueue(options.queue, options.exchange, ORDER_CREATED)
    await channel.prefetch(32)
    await channel.consume(options.queue, (msg) => consume(channel, msg))
    conn.on('error', () => undefined)
    conn.on('close', () => {
      if (closing) return
      const retry = (): void => {
        if (!closing) connect().catch(() => setTimeout(retry, 1_000))
      }
      setTimeout(retry, 500)
    })
    connection = conn
  }
  let app: FastifyInstance | undefined
  try {
    await connect()
    app = Fastify({ logger: false })
    app.get('/audit', { onRequest: adminGuard(options.adminToken) }, async (): Promise<NotifierAudit> => {
      const sum = db.prepare('SELECT COALESCE(SUM(count), 0) AS n FROM fs_deliveries').get() as { n: number }
      const rows = db.prepare('SELECT order_id, message_id FROM fs_notifications').all() as Array<{
        order_id: string
        message_id: string
      }>
      return { deliveries: sum.n, notifications: rows.map((r) => ({ orderId: r.order_id, messageId: r.message_id })) }
    })
    app.get('/healthz', async () => ({ ok: true }))
    const url = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 })
    const running = app
    return {
      url,
      close: async () => {
        closing = true
        await running.close()
        await connection?.close().catch(() => undefined)
        await inbox.close()
        db.close()
      },
    }
  } catch (error) {
    closing = true
    await app?.close()
    await connection?.close().catch(() => undefined)
    await inbox.close()
    db.close()
    throw error
  }
}
