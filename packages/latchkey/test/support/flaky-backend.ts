// The one implementation lives in `latchkey/testing`; kept as a path for the tests importing it.
export { flakyBackend } from '../../src/testing/flaky-backend.js'
