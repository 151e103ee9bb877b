export { type HttpBranchOptions, http } from './http-branch.js'
