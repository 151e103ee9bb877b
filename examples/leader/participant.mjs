// One participant of a leader election: run several (in terminals, or with `&`) on one backend URL. The leader
// runs a job until its term ends; Ctrl-C (or SIGTERM) gives up leadership and another participant takes over at once;
// kill -9 the leader and another takes over within the TTL.
//
//   node examples/leader/participant.mjs [backend URL] [id]     (default sqlite:./.data/leader-demo.db)
import { mkdirSync } from 'node:fs'
import { backendFromUrl, createLocks } from 'latchkey'

const url = process.argv[2] ?? 'sqlite:./.data/leader-demo.db'
if (url.startsWith('sqlite:./.data/')) mkdirSync('.data', { recursive: true })
const id = process.argv[3] ?? `pid-${process.pid}`
const backend = await backendFromUrl(url)
const locks = createLocks({ backend, namespace: 'demo' })
const leader = locks.leader('report-job', { id, ttlMs: 3_000 })

leader.on('elected', async (term) => {
  console.log(`${id}: elected, term token ${term.token}`)
  // The job: runs while the term lasts. Pass term.token to the resource so it can refuse a deposed leader's writes.
  while (!term.signal.aborted) {
    console.log(`${id}: working as leader (token ${term.token})`)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
  }
})
leader.on('revoked', ({ token, reason }) => console.log(`${id}: term ${token} ended (${reason})`))
console.log(`${id}: contending on ${backend.name}; leader now: ${leader.isLeader}`)

const stop = async () => {
  await leader.close() // ends the term, releases the lock: the next participant is elected at once
  await locks.close()
  await backend.close()
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
