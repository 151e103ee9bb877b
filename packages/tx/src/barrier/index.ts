export { type LocalOutcome, queryPrepared } from '../msg/query-prepared.js'
export { type BarrierKey, type BarrierOutcome, barrier, ensureBarrierTable } from './barrier.js'
export { DEFAULT_BARRIER_TABLE } from './barrier-sql.js'
