export * from './errors.js'
export * from './store/index.js'
export type * from './types.js'
