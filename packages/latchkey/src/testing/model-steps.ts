import type { LockKind } from '../backend/types.js'
import * as model from './grant-model.js'
import type { Actor } from './model-actors.js'

/** One step of a model run; `kind` for the steps that ask for a lock. */
export interface ModelStep {
  readonly op: 'try' | 'brief' | 'wait' | 'expire' | 'mismatch' | 'release' | 'leave'
  readonly actor: string
  readonly kind?: LockKind
}

/** The clients of a run. Four let a lock have a holder, waiters in line and a newcomer at once. */
export const ACTOR_IDS: readonly string[] = Object.freeze(['a', 'b', 'c', 'd'])

/**
 * The steps every run of `group` starts with. For the exclusive kinds: a try and a release of a free lock, a try
 * again, a waiter granted by the holder's release, its release, and a try once more: on Redis (for a mutex) the
 * scripts' fast paths (FREE_MUTEX, DROP_OWN) then grant and release between grants of the general rules, so a fast
 * path whose token, record or release differed from the general code's would be seen. The mutex runs also let a
 * lease of a free lock expire (FREE_MUTEX wrote its expiry).
 */
export function openingSteps(group: model.KindGroup): ModelStep[] {
  const kind = model.GROUP_KINDS[group].at(-1) as LockKind
  if (group === 'semaphore') {
    return [
      { op: 'try', actor: 'a', kind },
      { op: 'release', actor: 'a' },
    ]
  }
  return [
    { op: 'try', actor: 'a', kind },
    { op: 'release', actor: 'a' },
    { op: 'try', actor: 'a', kind },
    { op: 'wait', actor: 'b', kind },
    { op: 'release', actor: 'a' },
    { op: 'release', actor: 'b' },
    { op: 'try', actor: 'c', kind },
    { op: 'release', actor: 'c' },
    ...(group === 'mutex' ? [{ op: 'expire', actor: 'd', kind } as const] : []),
  ]
}

/** Expiries cost a lease's length in wall time each: a run waits for at most this many. */
const MAX_EXPIRIES = 1

/**
 * Draws the next step among those the model allows now (an idle actor asks, a holder releases, a waiter
 * leaves), with weights that keep locks contended: drawing from the model's state, not blindly, means every
 * step is meaningful and no sequence has to be filtered or shrunk.
 */
export function draw(
  random: () => number,
  state: model.GrantModel,
  actors: ReadonlyMap<string, Actor>,
  expiries: number,
): ModelStep {
  const choices: [number, ModelStep][] = []
  for (const a of actors.values()) {
    const actor = a.id
    if (a.lease !== undefined) choices.push([3, { op: 'release', actor }])
    else if (a.wait !== undefined) choices.push([1, { op: 'leave', actor }])
    else {
      for (const kind of model.GROUP_KINDS[state.group]) {
        const free = model.grantsNewcomer(state, kind)
        choices.push([3, { op: 'try', actor, kind }], [1, { op: 'brief', actor, kind }])
        if (!free && model.mayWait(state, kind)) choices.push([3, { op: 'wait', actor, kind }])
        if (expiries < MAX_EXPIRIES && model.expiryProbe(state, kind) !== undefined) {
          choices.push([1, { op: 'expire', actor, kind }])
        }
        if (kind === 'semaphore' && state.holders.size > 0) choices.push([1, { op: 'mismatch', actor, kind }])
      }
    }
  }
  let pick = random() * choices.reduce((sum, [weight]) => sum + weight, 0)
  for (const [weight, step] of choices) {
    pick -= weight
    if (pick < 0) return step
  }
  return (choices[choices.length - 1] as [number, ModelStep])[1]
}

/** A small seeded PRNG (mulberry32): the same seed gives the same sequence, so a failing run can be replayed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}
