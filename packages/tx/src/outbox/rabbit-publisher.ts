import { createRequire } from 'node:module'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { ChannelModel, ConfirmChannel, Message } from 'amqplib'
import { redactUrl } from 'latchkey'
import { TxError } from '../errors.js'
import { crashPoint } from './crash-point.js'
import type { OutboxPublisher, OutgoingMessage, PublishOutcome } from './types.js'

const require = createRequire(import.meta.url)

/** Options of {@link rabbitPublisher}. */
export interface RabbitPublisherOptions {
  /** AMQP URL, e.g. `amqp://guest:guest@127.0.0.1:5672/%2F`. */
  url: string
  /** Exchange messages are published to, with the message topic as routing key. Default `amq.topic`. */
  exchange?: string
  /** Longest wait for a confirm before the message counts as failed. Default 10_000 ms. */
  confirmTimeoutMs?: number
  /** Connection name shown by the broker (`rabbitmqctl list_connections client_properties`). */
  connectionName?: string
}

/** One connection and its confirm channel. */
interface Link {
  readonly connection: ChannelModel
  readonly channel: ConfirmChannel
  /** Message ids the broker returned as unroutable (basic.return comes before that message's ack). */
  readonly returned: Set<string>
  /** The connection went away. */
  lost: boolean
  /** The channel can no longer be used (connection lost, or the broker closed the channel). */
  dead: boolean
  broken: Error | undefined
}

/**
 * Publishes outbox messages to RabbitMQ (amqplib) on a confirm channel with `mandatory`: a message counts as
 * published only when the broker acks it and did not return it as unroutable. Messages are persistent, carry the
 * outbox message id as AMQP `messageId` and the key in header `x-message-key`. Connects lazily and reconnects
 * on the next publish after a connection loss.
 *
 * @example
 * const relay = outbox.relay({ publisher: rabbitPublisher({ url: 'amqp://127.0.0.1:5672', exchange: 'orders' }) })
 */
export function rabbitPublisher(options: RabbitPublisherOptions): OutboxPublisher {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`latchkey-tx: rabbitPublisher needs an options object, received ${String(options)}`)
  }
  if (typeof options.url !== 'string' || !/^amqps?:\/\//.test(options.url)) {
    throw new TypeError(
      `latchkey-tx: rabbitPublisher url must be an amqp:// URL, received ${redactUrl(String(options.url))}`,
    )
  }
  const exchange = options.exchange ?? 'amq.topic'
  if (typeof exchange !== 'string') {
    throw new TypeError(`latchkey-tx: rabbitPublisher exchange must be a string, received ${typeof exchange}`)
  }
  const timeoutMs = options.confirmTimeoutMs ?? 10_000
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(
      `latchkey-tx: rabbitPublisher confirmTimeoutMs must be a positive number, received ${timeoutMs}`,
    )
  }
  const name = options.connectionName ?? 'latchkey-tx-outbox'
  const shownUrl = redactUrl(options.url)
  let link: Promise<Link> | undefined
  let closed = false

  const connect = async (): Promise<Link> => {
    const amqp = loadAmqplib()
    const connection = await amqp.connect(options.url, { clientProperties: { connection_name: name } })
    const current: Link = {
      connection,
      channel: undefined as never,
      returned: new Set(),
      lost: false,
      dead: false,
      broken: undefined,
    }
    const lose = (error?: Error) => {
      current.lost = true
      current.dead = true
      current.broken ??= error
    }
    connection.on('error', lose) // without a listener an 'error' event would crash the process
    connection.on('close', lose)
    try {
      const channel = await connection.createConfirmChannel()
      channel.on('error', (error: Error) => {
        current.broken = error
      })
      channel.on('close', () => {
        current.dead = true
      })
      channel.on('return', (message: Message) => {
        const id = message.properties.messageId
        if (typeof id === 'string') current.returned.add(id)
      })
      Object.assign(current, { channel })
      return current
    } catch (error) {
      await connection.close().catch(() => undefined)
      throw error
    }
  }

  const unavailable = (error: unknown) =>
    new TxError(`latchkey-tx: RabbitMQ at ${shownUrl} unavailable: ${(error as Error)?.message ?? error}`, {
      code: 'PUBLISHER_UNAVAILABLE',
      retryable: true,
      cause: error,
    })

  return {
    async publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
      if (closed) return messages.map(() => unavailable(new Error('publisher closed')))
      let current: Link
      // Several partitions publish concurrently: only the caller that saw the link die replaces it; the others
      // wait for that replacement rather than opening connections of their own.
      let pending: Promise<Link> | undefined
      try {
        pending = link ??= connect()
        current = await pending
        if (current.dead) {
          // A lost connection, or a channel the broker closed (e.g. a missing exchange): start afresh.
          if (link === pending) {
            current.connection.close().catch(() => undefined)
            link = connect()
          }
          pending = link ?? connect()
          link = pending
          current = await pending
        }
      } catch (error) {
        if (link === pending) link = undefined
        return messages.map(() => unavailable(error))
      }
      const confirms = messages.map((message) => confirmOne(current, exchange, message))
      crashPoint('after-publish')
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs)
      })
      const settled = await Promise.race([Promise.all(confirms), timeout])
      clearTimeout(timer)
      if (settled === 'timeout') {
        // Late confirms of this channel can no longer be matched: start afresh on the next publish (unless a
        // concurrent publish already did).
        if (link === pending) link = undefined
        current.connection.close().catch(() => undefined)
        return messages.map(() => new TxError(`latchkey-tx: no confirm from RabbitMQ within ${timeoutMs} ms`))
      }
      // The connection's 'close' event may follow the channel's callbacks: let it land before classifying.
      await nextTurn()
      return settled.map((outcome) => {
        if (outcome === 'ok' || outcome.message !== 'channel closed') return outcome
        return current.lost ? unavailable(current.broken ?? outcome) : channelError(current, outcome)
      })
    },
    async close() {
      closed = true
      const pending = link
      link = undefined
      const current = await pending?.catch(() => undefined)
      await current?.connection.close().catch(() => undefined)
    },
  }
}

function confirmOne(link: Link, exchange: string, message: OutgoingMessage): Promise<PublishOutcome> {
  return new Promise((resolve) => {
    const properties = {
      messageId: message.id,
      contentType: 'application/json',
      persistent: true,
      mandatory: true,
      timestamp: Math.floor(Date.now() / 1000),
      headers: { ...message.headers, 'x-message-key': message.key },
    }
    try {
      link.channel.publish(exchange, message.topic, Buffer.from(message.payload), properties, (error) => {
        if (error) resolve(error instanceof Error ? error : new Error(String(error)))
        else if (link.returned.delete(message.id)) {
          resolve(
            new TxError(
              `latchkey-tx: RabbitMQ returned message ${message.id} as unroutable: no queue is bound to exchange "${exchange}" for routing key "${message.topic}"`,
              { code: 'UNROUTABLE' },
            ),
          )
        } else resolve('ok')
      })
    } catch (error) {
      // amqplib throws synchronously on a channel already closed.
      resolve(new Error('channel closed', { cause: error }))
    }
  })
}

function channelError(link: Link, outcome: Error): Error {
  const reason = link.broken?.message ?? outcome.message
  return new TxError(`latchkey-tx: RabbitMQ closed the channel: ${reason}`, {
    code: 'CHANNEL_CLOSED',
    cause: link.broken,
  })
}

function loadAmqplib(): typeof import('amqplib') {
  try {
    return require('amqplib') as typeof import('amqplib')
  } catch (error) {
    throw new TxError('latchkey-tx: rabbitPublisher needs amqplib: npm install amqplib', {
      code: 'MISSING_PEER',
      cause: error,
    })
  }
}
