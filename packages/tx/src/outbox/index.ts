/**
 * `latchkey-tx/outbox`: the transactional outbox (rows written in the business transaction), a leased relay that
 * publishes them with broker confirms, and the inbox that makes a consumer's effect happen once per message id.
 */
export type { CallerTrx } from './caller-trx.js'
export { createInbox, type Inbox, type InboxOptions, type OnceResult } from './inbox.js'
export { createOutbox, type Outbox, type OutboxOptions } from './outbox.js'
export { partitionOf } from './partition.js'
export { type RabbitPublisherOptions, rabbitPublisher } from './rabbit-publisher.js'
export { OutboxRelay, type RelayEvent, type RelayOptions } from './relay.js'
export type { StoreOptions } from './store-db.js'
export type { OutboxMessage, OutboxPublisher, OutboxStatus, OutgoingMessage, PublishOutcome } from './types.js'
