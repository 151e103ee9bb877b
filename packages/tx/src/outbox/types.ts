/** What the outbox stores and hands to a publisher. */

/** A message given to `outbox.add`. */
export interface OutboxMessage {
  /** Routing key on the broker (RabbitMQ: the routing key on the publisher's exchange), e.g. `order.created`. */
  topic: string
  /** Ordering key (e.g. the order id): one key's messages are published in insert order. */
  key: string
  /** Any JSON-serializable value; stored as JSON text, published as `application/json`. */
  payload: unknown
  /** The message id (AMQP `messageId`, the inbox's dedupe key). Default a random UUID. */
  id?: string
  /** Extra string headers. */
  headers?: Readonly<Record<string, string>>
}

/** A stored message as the relay hands it to a publisher. */
export interface OutgoingMessage {
  readonly id: string
  readonly topic: string
  readonly key: string
  /** The payload as JSON text. */
  readonly payload: string
  readonly headers: Readonly<Record<string, string>>
  /** Publish attempts before this one. */
  readonly attempts: number
}

/**
 * What a publisher reports for one message: `'ok'` once the broker took responsibility for it (a publisher
 * confirm), else the error. An error whose `code` is `PUBLISHER_UNAVAILABLE` (no connection) does not count
 * as an attempt of the message; any other does (nack, unroutable, confirm timeout, channel error).
 */
export type PublishOutcome = 'ok' | Error

/** A broker adapter. `rabbitPublisher` is one; any object with this shape is another. */
export interface OutboxPublisher {
  /**
   * Publishes every message, in the given order, and resolves once each one has an outcome. Never rejects for
   * one message's failure: it reports it in that message's slot.
   */
  publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]>
  /** Closes the broker connection. */
  close(): Promise<void>
}

/** Row states of the outbox table. */
export type OutboxStatus = 'pending' | 'sent' | 'dead' | 'discarded'
