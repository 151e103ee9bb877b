/**
 * A coordinator process for the notification crash test: `notify-coordinator.ts <storeUrl> <url> <gid>
 * <schedule,comma,separated>`. It starts one notification and keeps driving it until it is killed. Short lease,
 * so that the test's coordinator takes over soon after the SIGKILL.
 */
import { createCoordinator } from '../../src/index.js'

const [storeUrl, url, gid, schedule] = process.argv.slice(2)
if (storeUrl === undefined || url === undefined || gid === undefined || schedule === undefined) {
  throw new Error('usage: notify-coordinator.ts <storeUrl> <url> <gid> <schedule>')
}
setTimeout(() => process.exit(3), 30_000).unref()
const tc = createCoordinator({ store: storeUrl, recover: false, leaseTtlMs: 600 })
const r = await tc.notify({ url, body: { gid }, gid, schedule: schedule.split(','), wait: true })
process.stdout.write(`finished ${r.status}\n`)
await tc.close()
