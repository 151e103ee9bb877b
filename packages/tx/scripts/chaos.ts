/**
 * The bank-transfer chaos test over many seeds, outside the normal test run (PostgreSQL and MariaDB must be up):
 *   npx tsx packages/tx/scripts/chaos.ts --runs 200 [--from 1] [--transfers 24]
 *   npm run chaos -w latchkey-tx -- --runs 200
 * Prints a line per seed and a summary table; exits 1 when a seed broke an invariant (replay it with
 * `SEED=<n> npx vitest run packages/tx/test/bank-chaos.test.ts`), 2 when some seeds could not run at all.
 */
import { parseArgs } from 'node:util'
import { runMany } from '../test/support/chaos/summary.js'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '200' },
    from: { type: 'string', default: '1' },
    transfers: { type: 'string', default: '24' },
  },
})
const runs = Number(values.runs)
const from = Number(values.from)
const transfers = Number(values.transfers)
for (const [name, v] of Object.entries({ runs, from, transfers })) {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`--${name} must be a positive integer, received ${String(v)}`)
}
const seeds = Array.from({ length: runs }, (_, i) => from + i)
const { failedSeeds, erroredSeeds } = await runMany({ seeds, transfers, log: (line) => console.log(line) })
process.exit(failedSeeds.length > 0 ? 1 : erroredSeeds.length > 0 ? 2 : 0)
