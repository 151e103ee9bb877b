/**
 * RabbitMQ helpers for the outbox tests: a private topic exchange and queue per test (random names, deleted
 * after), a consumer that records every delivery, and a server-side close of one named connection. Only the
 * connections this test names are ever closed: other work shares the broker.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib'

export const RABBIT_URL = process.env.LATCHKEY_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672'

const run = promisify(execFile)

export interface Delivery {
  readonly id: string
  readonly key: string
  readonly topic: string
  readonly payload: unknown
  readonly redelivered: boolean
}

export interface TestBroker {
  readonly exchange: string
  readonly queue: string
  /** Every delivery so far, in arrival order (duplicates included). */
  readonly deliveries: Delivery[]
  /**
   * Starts consuming: `handle` runs per delivery before the ack (a throw nacks and requeues). Prefetch 1, so
   * deliveries are handled one at a time in queue order.
   */
  consume(handle?: (delivery: Delivery) => Promise<void>): Promise<void>
  /** Binds the queue to one more routing pattern. */
  bind(pattern: string): Promise<void>
  /** Deletes the queue and the exchange and closes the connection. */
  close(): Promise<void>
}

/** A fresh topic exchange with one queue bound to `binding` (default `#`, everything). */
export async function openTestBroker(binding = '#'): Promise<TestBroker> {
  const tag = randomBytes(4).toString('hex')
  const exchange = `latchkey-tx-test-${tag}`
  const queue = `latchkey-tx-test-${tag}`
  const connection: ChannelModel = await amqp.connect(RABBIT_URL)
  connection.on('error', () => undefined)
  const channel: Channel = await connection.createChannel()
  await channel.assertExchange(exchange, 'topic', { durable: false, autoDelete: false })
  await channel.assertQueue(queue, { durable: false, autoDelete: false })
  await channel.bindQueue(queue, exchange, binding)
  await channel.prefetch(1)
  const deliveries: Delivery[] = []
  return {
    exchange,
    queue,
    deliveries,
    async consume(handle) {
      await channel.consume(queue, (message: ConsumeMessage | null) => {
        if (message === null) return
        const delivery: Delivery = {
          id: String(message.properties.messageId),
          key: String(message.properties.headers?.['x-message-key']),
          topic: message.fields.routingKey,
          payload: JSON.parse(message.content.toString('utf8')),
          redelivered: message.fields.redelivered,
        }
        // After close() the channel refuses acks: the broker requeues the message anyway.
        const settle = (fn: () => void) => {
          try {
            fn()
          } catch {}
        }
        Promise.resolve(handle?.(delivery)).then(
          () => {
            deliveries.push(delivery)
            settle(() => channel.ack(message))
          },
          () => settle(() => channel.nack(message, false, true)),
        )
      })
    },
    async bind(pattern) {
      await channel.bindQueue(queue, exchange, pattern)
    },
    async close() {
      await channel.deleteQueue(queue).catch(() => undefined)
      await channel.deleteExchange(exchange).catch(() => undefined)
      await connection.close().catch(() => undefined)
    },
  }
}

/** Pids of the broker's connections whose client-provided name is `name`. */
export async function connectionsNamed(name: string): Promise<string[]> {
  // Tab-separated: the pid as close_connection takes it (<rabbit@host.N.N.N>), then the client properties.
  const { stdout } = await run('rabbitmqctl', [
    '-q',
    'list_connections',
    '--no-table-headers',
    'pid',
    'client_properties',
  ])
  return stdout
    .split('\n')
    .filter((line) => line.includes(`{"connection_name","${name}"}`))
    .map((line) => line.split('\t')[0] as string)
}

/**
 * Closes, from the broker's side, every connection whose client-provided name is `name`; resolves to their pids.
 * `rabbitmqctl close_connection` is what an operator (or a broker restart) does to a client.
 */
export async function closeConnectionsNamed(name: string): Promise<string[]> {
  const mine = await connectionsNamed(name)
  for (const pid of mine) await run('rabbitmqctl', ['-q', 'close_connection', pid, 'latchkey-tx test drop'])
  return mine
}
