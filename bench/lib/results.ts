/**
 * Everything one `npm run bench` measured (written to bench/results.json; RESULTS.md and the charts are
 * generated from it alone, so `--report-only` can rebuild them).
 */
import type { SaleConfig, SaleRecord } from '../sections/flash-sale.js'
import type { CellRecord, MatrixConfig } from '../sections/matrix.js'
import type { ScaleConfig, ScaleResults } from '../sections/scale.js'
import type { ContenderDef } from './contender-defs.js'
import type { MachineInfo } from './machine.js'
import type { BenchLine } from './redis-benchmark.js'

/** A contender as the report needs it (what of its definition is kept in the jsonl). */
export type DefInfo = Pick<ContenderDef, 'id' | 'label' | 'tables' | 'waits' | 'crossProcess' | 'maxWaiters'>

/** The whole run. */
export interface Results {
  readonly quick: boolean
  readonly machine: MachineInfo
  readonly matrixConfig: MatrixConfig
  readonly scaleConfig?: ScaleConfig
  readonly saleConfig?: Omit<SaleConfig, 'redisUrl'>
  readonly defs: readonly DefInfo[]
  readonly skipped: readonly { id: string; reason: string }[]
  readonly cells: readonly CellRecord[]
  readonly redisBenchmark?: readonly (readonly BenchLine[])[]
  readonly scale?: ScaleResults
  readonly flashSale?: {
    readonly records: readonly SaleRecord[]
    readonly strategies: readonly string[]
    /** The state of packages/latchkey/dist the app ran on. */
    readonly dist: string
    readonly backends: readonly { id: string; label: string; workers: number }[]
  }
  readonly sections: Record<string, number>
  readonly totalSeconds: number
  readonly loadAtEnd: string
  readonly cleanupFailures: readonly string[]
}
