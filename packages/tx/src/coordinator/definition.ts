import type { BranchOp, TxKind } from '../types.js'
import type { TxRun } from './tx-run.js'

/**
 * A protocol's registered definition: what a coordinator needs to start a transaction and to resume one it
 * finds in the log (after a crash, any coordinator that registered the same kind and name can finish it).
 */
export interface TxDefinition {
  readonly kind: TxKind
  readonly name: string
  /** The branch operations written with a new transaction, in order. */
  branches(): readonly { readonly id: string; readonly op: BranchOp; readonly seq: number }[]
  /** Drives the transaction from whatever state `run` holds to a final (or parked) state. */
  drive(run: TxRun): Promise<void>
  /** Whether every branch id stored for the transaction is known to this definition. */
  knows(branchIds: readonly string[]): boolean
}

/** Definitions by kind and name. */
export class Registry {
  private readonly byKey = new Map<string, TxDefinition>()

  /** Registers `def`; a second definition of the same kind and name would silently replace the first: refused. */
  add(def: TxDefinition): void {
    const key = `${def.kind}:${def.name}`
    if (this.byKey.has(key)) {
      throw new RangeError(`latchkey-tx: a ${def.kind} named "${def.name}" is already defined in this coordinator`)
    }
    this.byKey.set(key, def)
  }

  get(kind: TxKind, name: string): TxDefinition | undefined {
    return this.byKey.get(`${kind}:${name}`)
  }
}
