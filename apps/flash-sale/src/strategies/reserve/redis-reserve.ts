import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { evalScript, luaScript, readLuaFile } from 'latchkey/redis'
import type { BuyOutcome, Sale } from '../../store/types.js'

/** reserve.lua's reply: what happened, and the order id (the user's earlier one for a duplicate). */
type ReserveReply = readonly ['ordered' | 'duplicate' | 'sold-out', string]

const RESERVE = luaScript(
  'reserve',
  readLuaFile(new URL('./reserve.lua', import.meta.url)),
  (raw) => raw as ReserveReply,
)

/** Thrown when Redis could not be asked; the service answers 503 (retry). */
export class ReserveUnavailableError extends Error {
  constructor(saleId: string, cause: unknown) {
    super(`flash-sale: Redis did not answer the reservation for sale ${saleId}: ${String(cause)}`, { cause })
    this.name = 'ReserveUnavailableError'
  }
}

/** The Redis side of a reserve sale: what buyers have been promised (settled in SQL or not yet). */
export interface ReservedView {
  /** Units not reserved yet. */
  readonly remaining: number
  /** Units reserved (initial - remaining). */
  readonly sold: number
  /** Reservations (one per buyer). */
  readonly orders: number
}

/**
 * The Redis keys of one deployment. Every key carries the hash tag `{prefix}`, so the reserve script's keys
 * (a sale's stock and buyers, and the shared outbox) sit in one Redis Cluster slot.
 */
export class ReserveKeys {
  readonly outbox: string
  /** Outbox entries the relay could not settle (malformed, or refused by the store), kept for a human. */
  readonly deadLetters: string

  constructor(readonly prefix: string) {
    this.outbox = `{${prefix}}:outbox`
    this.deadLetters = `{${prefix}}:dead-letters`
  }

  stock(saleId: string): string {
    return `{${this.prefix}}:stock:${saleId}`
  }

  buyers(saleId: string): string {
    return `{${this.prefix}}:buyers:${saleId}`
  }
}

/**
 * The `reserve` strategy's front half: one Lua script checks the buyer, takes the stock and appends the
 * reservation to the outbox stream, atomically; the {@link OutboxRelay} writes it to the SQL store later.
 * A buyer's 201 therefore means "reserved in Redis"; the durable order follows within milliseconds, and
 * survives any crash in between because the reservation and its outbox entry were written together.
 *
 * @example
 * const reserve = new RedisReserve(new Redis(url), 'flash-sale')
 * await reserve.reserve(sale, 'alice', 1) // { status: 'ordered', orderId, bucket: 0 }
 */
export class RedisReserve {
  readonly keys: ReserveKeys
  /** Per sale, the smallest quantity Redis refused as sold out: final, since stock only decreases. */
  private readonly shortFrom = new Map<string, number>()

  /** `client` is used, never closed. `prefix` names the deployment (default `flash-sale`). */
  constructor(
    readonly client: Redis,
    prefix = 'flash-sale',
  ) {
    this.keys = new ReserveKeys(prefix)
  }

  /** Reserves `quantity` units for `userId`: ordered, duplicate (one order per user) or sold out. */
  async reserve(sale: Sale, userId: string, quantity: number): Promise<BuyOutcome> {
    // The seckill "sold out" flag: once Redis refused q units, q or more are refused without running the script.
    // A buyer who has an order still hears so: a retry after a lost 201 must learn its order was taken.
    if (quantity >= (this.shortFrom.get(sale.id) ?? Number.POSITIVE_INFINITY))
      return this.soldOutOrDuplicate(sale, userId)
    const orderId = randomUUID()
    const keys = [this.keys.stock(sale.id), this.keys.buyers(sale.id), this.keys.outbox]
    const args = [String(sale.stock), sale.id, userId, String(quantity), orderId, String(Date.now())]
    let reply: ReserveReply
    try {
      // ioredis re-sends the call after a reconnect: the same order id makes that harmless (see reserve.lua).
      reply = await evalScript(this.client, RESERVE, keys, args)
    } catch (error) {
      throw new ReserveUnavailableError(sale.id, error)
    }
    const [status] = reply
    if (status === 'ordered') return { status: 'ordered', orderId, bucket: 0 }
    if (status === 'duplicate') return { status: 'duplicate' }
    if (status === 'sold-out') {
      this.shortFrom.set(sale.id, Math.min(quantity, this.shortFrom.get(sale.id) ?? quantity))
      return { status: 'sold-out' }
    }
    throw new Error(`flash-sale: unexpected reply of reserve.lua: ${JSON.stringify(reply)}`)
  }

  private async soldOutOrDuplicate(sale: Sale, userId: string): Promise<BuyOutcome> {
    let existing: string | null
    try {
      existing = await this.client.hget(this.keys.buyers(sale.id), userId)
    } catch (error) {
      throw new ReserveUnavailableError(sale.id, error)
    }
    return existing === null ? { status: 'sold-out' } : { status: 'duplicate' }
  }

  /** The Redis view of `sale`, read in one MULTI (a consistent snapshot). */
  async view(sale: Sale): Promise<ReservedView> {
    const replies = await this.client.multi().get(this.keys.stock(sale.id)).hlen(this.keys.buyers(sale.id)).exec()
    const [[stockError, stock] = [], [buyersError, buyers] = []] = replies ?? []
    if (stockError || buyersError) throw stockError ?? buyersError
    const remaining = stock === null || stock === undefined ? sale.stock : Number(stock)
    return { remaining, sold: sale.stock - remaining, orders: Number(buyers) }
  }
}
