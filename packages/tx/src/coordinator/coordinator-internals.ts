import type { Coordinator } from './coordinator.js'
import type { TxDefinition } from './definition.js'
import type { Starter } from './run-result.js'

/**
 * What a service built into this package (the DTM-compatible server) needs beyond the public API: to register a
 * definition of its own and start transactions of it. Kept off the `Coordinator` interface, so that applications
 * define transactions only through the protocol builders.
 */
export interface CoordinatorInternals {
  readonly start: Starter
  register(def: TxDefinition): void
}

const INTERNALS = new WeakMap<Coordinator, CoordinatorInternals>()

/** Records the internals of a coordinator as it is made (see {@link internalsOf}). */
export function setInternals(tc: Coordinator, internals: CoordinatorInternals): void {
  INTERNALS.set(tc, internals)
}

/** The internals of a coordinator made by createCoordinator(). */
export function internalsOf(tc: Coordinator): CoordinatorInternals {
  const internals = INTERNALS.get(tc)
  if (internals === undefined) throw new TypeError('latchkey-tx: not a coordinator made by createCoordinator()')
  return internals
}
