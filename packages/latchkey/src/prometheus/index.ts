/**
 * `latchkey/prometheus`: lock metrics for prom-client (an optional peer dependency: `npm install prom-client`).
 * Loading this subpath loads prom-client; the rest of latchkey never does.
 */
export {
  type PrometheusMetrics,
  type PrometheusMetricsOptions,
  type PrometheusRegistry,
  prometheusMetrics,
} from './prometheus-metrics.js'
