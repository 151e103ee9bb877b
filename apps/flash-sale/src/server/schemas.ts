import { STRATEGIES } from '../store/types.js'

/** Largest sale and order accepted, and the range of `startsAt` (guards against typos such as an extra zero). */
export const LIMITS = Object.freeze({
  maxStock: 10_000_000,
  maxQuantity: 10,
  maxBuckets: 64,
  /** 2000-01-01T00:00:00Z: no sale starts earlier (a negative or tiny date is a typo). */
  earliestStartsAt: Date.UTC(2000, 0, 1),
  /** A sale starts at most a year ahead. */
  maxStartsAheadMs: 365 * 24 * 60 * 60 * 1000,
})

const errorBody = {
  type: 'object',
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string' },
    error: { type: 'string' },
    message: { type: 'string' },
  },
} as const

/** `POST /sales`. */
export const createSaleSchema = {
  body: {
    type: 'object',
    required: ['item', 'stock', 'strategy'],
    additionalProperties: false,
    properties: {
      item: { type: 'string', minLength: 1, maxLength: 200 },
      stock: { type: 'integer', minimum: 1, maximum: LIMITS.maxStock },
      // Epoch milliseconds or an ISO 8601 date-time; parsed in the handler.
      startsAt: { type: ['integer', 'string'], minimum: 0, maxLength: 64 },
      strategy: { type: 'string', enum: [...STRATEGIES] },
      buckets: { type: 'integer', minimum: 1, maximum: LIMITS.maxBuckets },
    },
  },
} as const

const saleParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 64 } },
} as const

/** `POST /sales/:id/orders`. */
export const orderSchema = {
  params: saleParams,
  body: {
    type: 'object',
    required: ['userId', 'quantity'],
    additionalProperties: false,
    properties: {
      userId: { type: 'string', minLength: 1, maxLength: 128 },
      quantity: { type: 'integer', minimum: 1, maximum: LIMITS.maxQuantity },
    },
  },
  response: {
    // `payment` only on a service selling paid orders: 'paid' (201) or 'pending' (202, settled later).
    201: { type: 'object', properties: { orderId: { type: 'string' }, payment: { type: 'string' } } },
    202: { type: 'object', properties: { orderId: { type: 'string' }, payment: { type: 'string' } } },
    // PAYMENT_DECLINED names the order whose stock was released.
    402: { type: 'object', properties: { ...errorBody.properties, orderId: { type: 'string' } } },
    '4xx': errorBody,
    '5xx': errorBody,
  },
} as const

/** `GET /sales/:id`. */
export const saleSchema = { params: saleParams } as const
