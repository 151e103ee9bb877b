// The one implementation lives in `latchkey/testing`; kept as a path for the tests and bench scripts importing it.
export { eventually } from '../../src/testing/eventually.js'
