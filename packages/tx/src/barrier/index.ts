export { type BarrierKey, type BarrierOutcome, barrier, ensureBarrierTable } from './barrier.js'
export { DEFAULT_BARRIER_TABLE } from './barrier-sql.js'
