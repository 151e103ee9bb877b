/**
 * Sends one call to every node in parallel, each with its own deadline, and resolves as soon as the caller's
 * `decided` says the votes so far settle the question (a majority for, or a majority impossible): a dead or
 * paused node then costs at most one node timeout, and often nothing.
 */
import type { RedlockNode } from './redlock-node.js'

/** One node's answer; `pending` when the fan-out resolved before that node answered. */
export type Vote =
  | { readonly state: 'ok'; readonly value: unknown }
  | { readonly state: 'timeout' | 'pending' }
  | { readonly state: 'error'; readonly error: unknown }

/** Per-node deadline and, for nodes never heard from, a longer first-contact deadline. */
export interface FanOutTiming {
  readonly timeoutMs: number
  readonly firstContactMs: number
}

/**
 * Nodes that have answered at least once in this process. Until then a node gets the longer first-contact
 * deadline: a client created a moment ago is still connecting, and failing it would fail the first acquire.
 */
const heard = new WeakSet<RedlockNode>()

/**
 * Runs `call` on every node. `decided(votes)` is asked after each answer; `undefined` entries are still pending.
 * Never rejects: errors and timeouts become votes.
 */
export function fanOut(
  nodes: readonly RedlockNode[],
  call: (node: RedlockNode) => Promise<unknown>,
  timing: FanOutTiming,
  decided: (votes: readonly (Vote | undefined)[]) => boolean = () => false,
): Promise<Vote[]> {
  return new Promise((resolve) => {
    const votes: (Vote | undefined)[] = nodes.map(() => undefined)
    const timers: NodeJS.Timeout[] = []
    let open = nodes.length
    let done = false
    const finish = () => {
      done = true
      for (const t of timers) clearTimeout(t)
      resolve(votes.map((v) => v ?? { state: 'pending' }))
    }
    const settle = (i: number, vote: Vote) => {
      if (done || votes[i] !== undefined) return
      votes[i] = vote
      open--
      if (open === 0 || decided(votes)) finish()
    }
    // One timer per deadline (normally just one), not one per node: this runs twice per lock cycle.
    const groups = new Map<number, number[]>()
    nodes.forEach((node, i) => {
      if (node.offline) {
        // Known to be down: fail now rather than queue the command behind a reconnect.
        queueMicrotask(() => settle(i, { state: 'error', error: new Error(`${node.label} is disconnected`) }))
        return
      }
      const ms = heard.has(node) ? timing.timeoutMs : Math.max(timing.timeoutMs, timing.firstContactMs)
      groups.set(ms, [...(groups.get(ms) ?? []), i])
      call(node).then(
        (value) => {
          heard.add(node)
          settle(i, { state: 'ok', value })
        },
        (error: unknown) => settle(i, { state: 'error', error }),
      )
    })
    for (const [ms, members] of groups) {
      // The timer phase runs before the poll phase: a reply already in the socket buffer would lose to a timer
      // that fired during a busy tick. One setImmediate lets that reply in before the node is called timed out.
      const timeOut = () => {
        for (const i of members) settle(i, { state: 'timeout' })
      }
      timers.push(setTimeout(() => setImmediate(timeOut), ms))
    }
    if (nodes.length === 0) finish()
  })
}

/** Counts of each kind of vote. */
export function tally(votes: readonly (Vote | undefined)[], isYes: (value: unknown) => boolean) {
  let yes = 0
  let no = 0
  let pending = 0
  for (const v of votes) {
    if (v === undefined) pending++
    else if (v.state === 'ok') {
      if (isYes(v.value)) yes++
      else no++
    }
  }
  return { yes, no, pending, answered: yes + no }
}
