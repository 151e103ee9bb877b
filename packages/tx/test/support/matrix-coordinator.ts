/**
 * A coordinator process for the crash matrix: `matrix-coordinator.ts <storeUrl> <ledgerPath> <scenario> <gid>
 * <leaseTtlMs> [timeoutMs]`. Runs one scenario of `matrix-saga.ts` with recovery off; the crash point named
 * by `LATCHKEY_TX_CRASH_AT` stops it (or, with `trace`, it lists every point it passes), else it prints
 * `finished <status>` and exits.
 */
import { createCoordinator } from '../../src/index.js'
import { defineMatrix, MATRIX_RETRY, SCENARIOS } from './matrix-saga.js'

const [storeUrl, ledgerPath, name, gid, leaseTtlMs, timeoutMs] = process.argv.slice(2)
const scenario = SCENARIOS.find((s) => s.name === name)
if (storeUrl === undefined || ledgerPath === undefined || gid === undefined || scenario === undefined) {
  throw new Error('usage: matrix-coordinator.ts <storeUrl> <ledgerPath> <scenario> <gid> <leaseTtlMs> [timeoutMs]')
}
// Never outlive a test that forgot to kill us (a SIGSTOPped process runs this once continued).
setTimeout(() => process.exit(3), 60_000).unref()
const tc = createCoordinator({
  store: storeUrl,
  recover: false,
  leaseTtlMs: Number(leaseTtlMs),
  retry: MATRIX_RETRY,
  ...(timeoutMs === undefined ? {} : { timeoutMs: Number(timeoutMs) }),
})
const { saga, tcc, close } = defineMatrix(tc, ledgerPath)
const result = await (scenario.kind === 'tcc' ? tcc : saga).run(scenario.input, { gid })
process.stdout.write(`finished ${result.status}${result.error ? ` ${result.error.name}` : ''}\n`)
await tc.close()
close()
