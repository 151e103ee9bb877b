/**
 * `latchkey/opentelemetry`: lock spans and metrics through `@opentelemetry/api` (an optional peer dependency:
 * `npm install @opentelemetry/api`). Loading this subpath loads the API; the rest of latchkey never does.
 */
export { ACQUIRE_SPAN, BACKEND_ERROR_SPAN } from './acquire-spans.js'
export {
  type OpenTelemetryInstrumentation,
  type OpenTelemetryOptions,
  openTelemetryInstrumentation,
} from './open-telemetry.js'
