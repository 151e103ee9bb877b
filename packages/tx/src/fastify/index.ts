export { type BranchCall, readBranchCall } from './branch-call.js'
export { BranchFailure, BranchOngoing, isBranchFailure, isBranchOngoing } from './branch-errors.js'
export type { InTransaction, Isolation } from './local-tx.js'
export { type BranchHandler, type BranchHandlers, type TxParticipantOptions, txParticipant } from './plugin.js'
