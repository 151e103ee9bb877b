import { createFenceGuard, type FenceGuard } from 'latchkey/fence'
import { HistoryWriter } from '../lib/history.js'

/**
 * The protected resource: one integer register. It records every operation on its own clock (so the overlap
 * witness does not trust any client's view) and, with fencing on, admits a read or a write only when its token
 * is at least the highest admitted so far, through latchkey's own fence guard. Reads are fenced too: a stale
 * holder whose successor has already read must not write, or the successor's increment would be lost.
 */
export class Referee {
  private value = 0
  private readonly guard: FenceGuard | undefined
  private readonly log: HistoryWriter
  /** Clients inside the critical section (between their read and their exit), as the referee sees it. */
  readonly inside = new Set<string>()

  constructor(historyPath: string, fencing: boolean) {
    this.log = new HistoryWriter(historyPath, 'referee')
    this.guard = fencing ? createFenceGuard() : undefined
  }

  /** The register's value now. */
  get current(): number {
    return this.value
  }

  /** A client enters and reads the register. */
  async read(proc: string, token: string): Promise<{ accepted: boolean; value: number }> {
    this.inside.add(proc)
    const accepted = await this.admit(token)
    this.log.log(accepted ? 'ok' : 'fail', 'enter', { token, value: this.value, accepted, client: proc })
    return { accepted, value: this.value }
  }

  /** A client writes `value`; applied only when the fence admits it (always, with fencing off). */
  async write(proc: string, token: string, value: number): Promise<boolean> {
    const accepted = await this.admit(token)
    if (accepted) this.value = value
    this.log.log(accepted ? 'ok' : 'fail', 'write', { token, value, accepted, client: proc })
    return accepted
  }

  /** A client leaves the critical section (or died in it). */
  exit(proc: string, why = 'exit'): void {
    if (!this.inside.delete(proc)) return
    this.log.log('ok', why, { client: proc })
  }

  private async admit(token: string): Promise<boolean> {
    if (this.guard === undefined) return true
    try {
      await this.guard.admit('resource', BigInt(token))
      return true
    } catch {
      return false
    }
  }
}
