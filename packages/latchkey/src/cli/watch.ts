/**
 * `latchkey watch`: polls `inspect` and prints each holder and waiter that appears or goes, until the signal
 * aborts (Ctrl-C). Polling works on every backend alike; the interval bounds how long a change goes unseen
 * (a holder and waiter that come and go within one interval are not shown).
 */
import type { HolderInfo, LockInspection, WaiterInfo } from '../backend/inspection.js'
import type { Locks } from '../core/locks.js'
import { jsonText, remaining } from './format.js'

/** One change seen by `watch`. */
export interface WatchChange {
  readonly at: number
  readonly change: 'held' | 'released' | 'waiting' | 'stopped waiting'
  readonly owner: string
  readonly kind: string
  readonly token?: bigint
  readonly expiresAt?: number
}

const holderId = (h: HolderInfo) => `${h.owner}\u0000${h.kind}\u0000${h.token ?? ''}`
const waiterId = (w: WaiterInfo) => `${w.owner}\u0000${w.kind}`

/** The changes from `before` to `after`: holders and waiters that appeared or went. */
export function changes(before: LockInspection | undefined, after: LockInspection, at: number): WatchChange[] {
  const out: WatchChange[] = []
  const had = new Map((before?.holders ?? []).map((h) => [holderId(h), h]))
  const has = new Map(after.holders.map((h) => [holderId(h), h]))
  const waited = new Map((before?.waiters ?? []).map((w) => [waiterId(w), w]))
  const waits = new Map(after.waiters.map((w) => [waiterId(w), w]))
  const holder = (change: WatchChange['change'], h: HolderInfo): WatchChange => ({
    at,
    change,
    owner: h.owner,
    kind: h.kind,
    ...(h.token === undefined ? {} : { token: h.token }),
    ...(h.expiresAt === undefined || change === 'released' ? {} : { expiresAt: h.expiresAt }),
  })
  for (const [id, h] of had) if (!has.has(id)) out.push(holder('released', h))
  for (const [id, w] of waited)
    if (!waits.has(id)) out.push({ at, change: 'stopped waiting', owner: w.owner, kind: w.kind })
  for (const [id, h] of has) if (!had.has(id)) out.push(holder('held', h))
  for (const [id, w] of waits) if (!waited.has(id)) out.push({ at, change: 'waiting', owner: w.owner, kind: w.kind })
  return out
}

/** A change as one line of text. */
export function changeText(c: WatchChange): string {
  const time = new Date(c.at).toISOString().slice(11, 23)
  const token = c.token === undefined ? '' : ` token ${c.token}`
  const expiry = c.expiresAt === undefined ? '' : ` expires in ${remaining(c.expiresAt, c.at)}`
  return `${time}  ${c.change.padEnd(15)} ${c.kind.padEnd(9)} ${c.owner}${token}${expiry}`
}

/** Prints every change of lock `name` until `signal` aborts. */
export async function watch(
  locks: Locks,
  name: string,
  options: { intervalMs: number; json: boolean; signal: AbortSignal },
  out: NodeJS.WritableStream,
): Promise<void> {
  let last: LockInspection | undefined
  while (!options.signal.aborted) {
    const state = await locks.inspect(name)
    const now = Date.now()
    if (last === undefined && !options.json) {
      out.write(
        `watching lock ${JSON.stringify(name)} every ${options.intervalMs} ms (Ctrl-C to stop): ${state.holders.length} holder(s), ${state.waiters.length} waiter(s)\n`,
      )
    }
    for (const c of changes(last, state, now)) out.write(`${options.json ? jsonText(c, 0) : changeText(c)}\n`)
    last = state
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, options.intervalMs)
      function done() {
        clearTimeout(timer)
        options.signal.removeEventListener('abort', done)
        resolve()
      }
      options.signal.addEventListener('abort', done, { once: true })
    })
  }
}
