import amqp from 'amqplib'

/** One message of the bare loop: its id, its key header and its JSON payload. */
export type BareMessage = (i: number) => { id: string; key: string; payload: unknown }

/** What the bare loop publishes, and where. */
export interface ConfirmLoopOptions {
  readonly url: string
  readonly exchange: string
  readonly routingKey: string
  readonly messages: number
  /** Messages per window: a window is published, then all its confirms are awaited before the next. */
  readonly batch: number
  /** Windows in flight at once. */
  readonly windows: number
  readonly message: BareMessage
}

/**
 * The bare amqplib loop the outbox relay is compared with: persistent, mandatory messages on a confirm channel,
 * `windows` windows of `batch` messages in flight, each awaited as a whole before its next. Resolves with the
 * messages/s from the first publish to the last confirm.
 */
export async function confirmedPublishRate(o: ConfirmLoopOptions): Promise<number> {
  const conn = await amqp.connect(o.url)
  const ch = await conn.createConfirmChannel()
  let next = 0
  const started = performance.now()
  const worker = async () => {
    while (next < o.messages) {
      const take = Math.min(o.batch, o.messages - next)
      const first = next
      next += take
      const confirms: Promise<void>[] = []
      for (let i = first; i < first + take; i++) {
        const { id, key, payload } = o.message(i)
        confirms.push(
          new Promise((resolve, reject) => {
            ch.publish(
              o.exchange,
              o.routingKey,
              Buffer.from(JSON.stringify(payload)),
              {
                messageId: id,
                contentType: 'application/json',
                persistent: true,
                mandatory: true,
                timestamp: Math.floor(Date.now() / 1000),
                headers: { 'x-message-key': key },
              },
              (error) => (error ? reject(error) : resolve()),
            )
          }),
        )
      }
      await Promise.all(confirms)
    }
  }
  await Promise.all(Array.from({ length: o.windows }, worker))
  const seconds = (performance.now() - started) / 1000
  await conn.close()
  return o.messages / seconds
}
