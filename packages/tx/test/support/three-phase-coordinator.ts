/**
 * A coordinator process for the 3PC tests: `three-phase-coordinator.ts <storeUrl> <3pc|tcc> <gid> <urlA> <urlB>
 * [input JSON]`. It runs the transfer and stops where `LATCHKEY_TX_CRASH_AT` says (the crash point SIGKILLs it).
 * Its lease (5 s) outlasts a starved event loop on a loaded machine; recovery starts once it expires.
 */
import { createCoordinator } from '../../src/index.js'
import { defineTransfer } from './three-phase-transfer.js'

const [storeUrl, kind, gid, urlA, urlB, input] = process.argv.slice(2)
if (storeUrl === undefined || gid === undefined || urlA === undefined || urlB === undefined) {
  throw new Error('usage: three-phase-coordinator.ts <storeUrl> <3pc|tcc> <gid> <urlA> <urlB> [input]')
}
setTimeout(() => process.exit(3), 60_000).unref()
const tc = createCoordinator({ store: storeUrl, recover: false, leaseTtlMs: 5_000, timeoutMs: 30_000 })
const transfer = defineTransfer(tc, { a: urlA, b: urlB })
const result = await (kind === 'tcc' ? transfer.tcc : transfer.threePhase).run(
  input === undefined ? { amounts: { a: -30, b: 30 } } : JSON.parse(input),
  { gid },
)
process.stdout.write(`finished ${result.status}${result.error === undefined ? '' : ` ${result.error.message}`}\n`)
await tc.close()
