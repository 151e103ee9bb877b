/** The transfer of the 3PC tests, defined the same way by the coordinator processes and the test process. */

import { http } from '../../src/http/index.js'
import { type Coordinator, type Tcc, type ThreePhase, threePhaseHttp } from '../../src/index.js'

export type TransferInput = { amounts: Record<string, number>; refuse?: string }

/** Participant base URLs by id (`a`, `b`): `/3pc` and `/tcc` under each. */
export function defineTransfer(
  tc: Coordinator,
  urls: Record<string, string>,
  /** Each call's HTTP deadline, one for all or per participant id (default 3 000). */
  httpTimeoutMs: number | Record<string, number> = 3_000,
): { threePhase: ThreePhase<TransferInput>; tcc: Tcc<TransferInput> } {
  const ids = Object.keys(urls)
  const timeout = (id: string) => (typeof httpTimeoutMs === 'number' ? httpTimeoutMs : (httpTimeoutMs[id] ?? 3_000))
  const threePhase = tc.threePhase<TransferInput>(
    'transfer-3pc',
    Object.fromEntries(ids.map((id) => [id, threePhaseHttp(`${urls[id]}/3pc`, { timeoutMs: timeout(id) })])),
  )
  const tcc = tc.tcc<TransferInput>(
    'transfer-tcc',
    Object.fromEntries(ids.map((id) => [id, http.tcc<TransferInput>(`${urls[id]}/tcc`, { timeoutMs: timeout(id) })])),
  )
  return { threePhase, tcc }
}
