/**
 * The decision of a DTM transaction that waits for its application (a TCC's or a message's `submit` or `abort`,
 * or the verdict the server reaches by itself: a TCC's timeout, a message's check-back), durable before the
 * server answers: a one-step no-op saga record of its own, `<gid>/decision`, in the same log. Its gid is unique,
 * so a late submit and the server's own verdict cannot both win: whoever writes it first decides. (The record's
 * definition keeps the name it had when only TCCs used it, so that logs written then stay readable.)
 */
import type { Coordinator } from '../coordinator/coordinator.js'
import { isTxError } from '../errors.js'
import type { Saga } from '../saga/saga.js'

export type Decision = 'submit' | 'abort'

export const DTM_DECISION = 'dtm-tcc-decision'

const decisionGid = (gid: string) => `${gid}/decision`

export class DtmDecisions {
  private readonly records: Saga<{ decision: Decision; reason: string }>

  constructor(private readonly tc: Coordinator) {
    this.records = tc.saga<{ decision: Decision; reason: string }>(DTM_DECISION).step('record', { action: () => null })
  }

  /** The decision written for `gid`, if any. */
  async get(gid: string): Promise<Decision | undefined> {
    const record = await this.tc.get(decisionGid(gid))
    return (record?.input as { decision?: Decision } | undefined)?.decision
  }

  /** Writes the decision unless one exists; resolves with the decision that holds. */
  async decide(gid: string, decision: Decision, reason: string): Promise<Decision> {
    try {
      await this.records.run({ decision, reason }, { gid: decisionGid(gid) })
      return decision
    } catch (error) {
      if (!isTxError(error) || (error.code !== 'DUPLICATE_GID' && error.code !== 'TX_BUSY')) throw error
      const existing = await this.get(gid)
      if (existing === undefined) throw error
      return existing
    }
  }
}
