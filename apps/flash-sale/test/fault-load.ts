import { ADMIN_TOKEN } from './support.js'

/** Units on sale in the fault tests: fewer than the buyers, so each sale sells out with the fault in it. */
export const STOCK = 150

/**
 * The load the fault tests put on a sale (spread into `runSale` with the sale's URLs, strategy and id): 500
 * buyers from 2 load processes with 24 requests in flight each, enough for a kill to land mid-sale.
 */
export const FAULT_LOAD = Object.freeze({
  adminToken: ADMIN_TOKEN,
  buyers: 500,
  processes: 2,
  concurrency: 24,
  progress: false,
})
