/**
 * A coordinator process for the crash test: `crash-coordinator.ts <storeUrl> <ledgerPath> <crashAt> <gid>
 * <failAt> <saga|tcc>`. It runs the crash saga (or TCC) until the operation named `crashAt` has committed its effect, prints
 * `crash-point`, and waits to be killed (SIGKILL). Its lease is short so that recovery starts soon after.
 */
import { createCoordinator } from '../../src/index.js'
import { defineCrashSaga } from './crash-saga.js'

const [storeUrl, ledgerPath, crashAt, gid, failAt, kind] = process.argv.slice(2)
if (storeUrl === undefined || ledgerPath === undefined || gid === undefined) {
  throw new Error('usage: crash-coordinator.ts <storeUrl> <ledgerPath> <crashAt> <gid> <failAt> <saga|tcc>')
}
// Never outlive a test that forgot to kill us.
setTimeout(() => process.exit(3), 30_000)
const tc = createCoordinator({ store: storeUrl, recover: false, leaseTtlMs: 600, retry: { firstMs: 5, maxMs: 20 } })
const { saga, tcc } = defineCrashSaga(tc, ledgerPath, crashAt)
const input = failAt === undefined || failAt === '-' ? {} : { failAt }
const result = await (kind === 'tcc' ? tcc : saga).run(input, { gid })
process.stdout.write(`finished ${result.status}\n`)
