export { describeBackendConformance } from './conformance.js'
export { countingBackend } from './counting-backend.js'
export type { ConformanceOptions } from './env.js'
