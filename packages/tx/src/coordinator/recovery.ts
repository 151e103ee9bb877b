/**
 * The recovery sweep: every `everyMs`, asks for unfinished transactions and hands each to `resume`, which
 * takes the transaction's lease if nobody holds it (its coordinator died or stalled) and drives it on.
 * The timer is unref'd: a sweeping coordinator does not keep the process alive by itself.
 */
export class RecoverySweep {
  private timer: NodeJS.Timeout | undefined
  private sweeping: Promise<void> | undefined
  private stopped = false

  constructor(
    private readonly everyMs: number,
    private readonly sweep: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    this.schedule(0)
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.sweeping = this.sweep()
        .catch(this.onError)
        .finally(() => {
          this.sweeping = undefined
          this.schedule(this.everyMs)
        })
    }, ms)
    this.timer.unref()
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.sweeping
  }
}
