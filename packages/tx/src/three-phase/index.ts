export { TxHeuristicError } from './heuristic-error.js'
export { threePhaseParticipant } from './participant.js'
export { DEFAULT_3PC_TABLE, type DecidedBy, type ParticipantState, type StateRow } from './participant-sql.js'
export {
  type ParticipantAnswer,
  type ParticipantEvent,
  type ThreePhaseContext,
  type ThreePhaseMessage,
  type ThreePhaseParticipantHandle,
  type ThreePhaseParticipantOptions,
  ThreePhaseRefusal,
} from './participant-types.js'
export type { ThreePhase, ThreePhaseParticipant } from './three-phase.js'
export { threePhaseHttp, threePhaseListener } from './three-phase-http.js'
