/**
 * The chaos test's coordinator, run as a child process: `coordinator.ts <storeUrl> <bankAUrl> <bankBUrl>`.
 * It defines the two transfer sagas (A→B and B→A, each `out` on the payer's bank then `in` on the payee's, as
 * http() branches) and the two transfer TCCs (participants `out` and `in` on the same banks), recovers what a killed predecessor left on the same store, and reads JSON commands on stdin:
 * `{ "cmd": "submit", "gid", "kind": "ab" | "ba" | "tcc-ab" | "tcc-ba", "input" }` → prints `submitted <gid>` once durably submitted;
 * `{ "cmd": "retry-parked" }` → `tc.retry` on every parked transaction, prints `retried <n>`. Prints `ready`.
 */
import { createInterface } from 'node:readline'
import { http } from '../../../src/http/index.js'
import { createCoordinator } from '../../../src/index.js'
import type { TransferInput } from './participant.js'

const [storeUrl, bankA, bankB] = process.argv.slice(2)
if (storeUrl === undefined || bankA === undefined || bankB === undefined) {
  throw new Error('usage: coordinator.ts <storeUrl> <bankAUrl> <bankBUrl>')
}
setTimeout(() => process.exit(3), 10 * 60_000).unref()

/** Shorter than the participants' slow answers, so those time out and are retried. */
const HTTP = { timeoutMs: 400 }
const tc = createCoordinator({
  store: storeUrl,
  timeoutMs: 20_000,
  recoverEveryMs: 200,
  leaseTtlMs: 1_000,
  retry: { firstMs: 20, maxMs: 300, attempts: 10 },
})
const transfer = (name: string, payer: string, payee: string) =>
  tc
    .saga<TransferInput>(name)
    .step('out', { action: http(`${payer}/out`, HTTP), compensate: http(`${payer}/out`, HTTP) })
    .step('in', { action: http(`${payee}/in`, HTTP), compensate: http(`${payee}/in`, HTTP) })
const tcc = (name: string, payer: string, payee: string) =>
  tc.tcc<TransferInput>(name, { out: http.tcc(`${payer}/tcc-out`, HTTP), in: http.tcc(`${payee}/tcc-in`, HTTP) })
const kinds = {
  ab: transfer('transfer-ab', bankA, bankB),
  ba: transfer('transfer-ba', bankB, bankA),
  'tcc-ab': tcc('tcc-ab', bankA, bankB),
  'tcc-ba': tcc('tcc-ba', bankB, bankA),
}

const say = (line: string) => process.stdout.write(`${line}\n`)

createInterface({ input: process.stdin }).on('line', (line) => {
  const command = JSON.parse(line) as { cmd: string; gid: string; kind: keyof typeof kinds; input: TransferInput }
  if (command.cmd === 'submit') {
    kinds[command.kind].run(command.input, { gid: command.gid, wait: false }).then(
      () => say(`submitted ${command.gid}`),
      (error: unknown) => say(`submit-failed ${command.gid} ${String(error)}`),
    )
  } else if (command.cmd === 'retry-parked') {
    void retryParked().then((n) => say(`retried ${n}`))
  }
})

async function retryParked(): Promise<number> {
  const parked = await tc.list({ status: 'parked', limit: 10_000 })
  // Not awaited to the end: recovery and these retries drive them; the test polls the log.
  for (const tx of parked) void tc.retry(tx.gid).catch(() => undefined)
  return parked.length
}

say('ready')
