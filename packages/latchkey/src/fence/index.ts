export { StaleTokenError } from '../errors.js'
export { createFenceGuard, type FenceGuard, type FenceStore, memoryFenceStore } from './fence-guard.js'
export { type FencedUpdateOptions, fencedUpdate } from './fenced-update.js'
