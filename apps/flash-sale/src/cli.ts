/**
 * `flash-sale serve | load | demo`.
 *
 *   serve  --store URL --backend URL [--redis URL] --port 3000 --workers 1 --host 127.0.0.1 --lock-ttl-ms 5000
 *          [--admin-token T] [--max-event-streams 200]
 *   load   --url http://127.0.0.1:3000[,more] --strategy lock[,sharded] --stock 100 --buyers 10000
 *          --processes 2 --concurrency 64 --dup-rate 0.05 [--sale ID] [--admin-token T]
 *   demo   --workers 3 --buyers 10000 --stock 100 [--backend URL --store URL --redis URL --strategy ...]
 *          [--payments [--payments-db URL] [--rabbitmq URL]]
 *
 * `--redis URL` enables the `reserve` strategy (Redis reserve + outbox relay). The demo also takes it from a
 * `--backend redis://...`, and without either it skips `reserve` and says so.
 *
 * Secrets can come from the environment instead of argv, which every user of the machine can read (`ps`):
 * FLASH_SALE_STORE, FLASH_SALE_BACKEND, FLASH_SALE_REDIS (URLs with passwords), FLASH_SALE_ADMIN_TOKEN. Every
 * URL printed is redacted (`redactUrl`).
 */
import { parseArgs } from 'node:util'
import { redactText, redactUrl } from 'latchkey'
import { startCluster } from './cluster.js'
import { LEGEND, runDemo } from './demo.js'
import { formatChecks, formatTable, type ResultRow } from './load/report.js'
import { runSale } from './load/run-sale.js'
import { checkAdminToken, MIN_ADMIN_TOKEN_LENGTH } from './server/admin-auth.js'
import { startService } from './service.js'
import { STRATEGIES, type Strategy } from './store/types.js'

const USAGE = `usage: flash-sale <serve|load|demo> [options]
  serve  --store sqlite:./flash-sale.db --backend sqlite:./flash-sale-locks.db [--redis redis://127.0.0.1:6379]
         --port 3000 --workers 1
         [--admin-token T] [--max-event-streams 200]
  load   --url http://127.0.0.1:3000[,http://127.0.0.1:3001] --strategy db-atomic,lock,reserve,sharded
         --stock 100 --buyers 10000 --processes 2 --concurrency 64 --dup-rate 0.05 [--sale ID] [--admin-token T]
  demo   --workers 3 --buyers 10000 --stock 100 [--backend URL] [--store URL] [--redis URL] [--strategy ...]
         [--payments [--payments-db sqlite:./pay.db|postgres://...|mysql://...] [--rabbitmq amqp://...]]
--payments pays every sold order through a saga (payment service, stock released when declined) and announces it
through the outbox to a notifier over RabbitMQ (scripts/demo.sh --payments starts RabbitMQ when none answers).
--redis enables the reserve strategy (the demo skips it without Redis; a redis:// --backend counts as --redis).
--admin-token (at least ${MIN_ADMIN_TOKEN_LENGTH} characters) guards POST /sales and GET /sales/:id/audit; without one
those routes are refused. Prefer the environment to argv for secrets (ps shows argv): FLASH_SALE_ADMIN_TOKEN,
FLASH_SALE_STORE, FLASH_SALE_BACKEND, FLASH_SALE_REDIS.`

const OPTIONS = {
  store: { type: 'string' },
  backend: { type: 'string' },
  redis: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  workers: { type: 'string' },
  'lock-ttl-ms': { type: 'string' },
  url: { type: 'string' },
  strategy: { type: 'string' },
  stock: { type: 'string' },
  buyers: { type: 'string' },
  processes: { type: 'string' },
  concurrency: { type: 'string' },
  'dup-rate': { type: 'string' },
  sale: { type: 'string' },
  'admin-token': { type: 'string' },
  'max-event-streams': { type: 'string' },
  payments: { type: 'boolean' },
  'payments-db': { type: 'string' },
  rabbitmq: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values']

function num(values: Values, name: keyof Values, fallback: number): number {
  const raw = values[name]
  if (raw === undefined) return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n < 0)
    throw new RangeError(`--${name} must be a non-negative number, received ${String(raw)}`)
  return n
}

function strategies(raw: string | undefined): Strategy[] {
  if (raw === undefined) return [...STRATEGIES]
  const list = raw.split(',').map((s) => s.trim())
  for (const s of list) {
    if (!STRATEGIES.includes(s as Strategy))
      throw new RangeError(`unknown strategy ${s}; expected ${STRATEGIES.join(', ')}`)
  }
  return list as Strategy[]
}

/** A flag's value, else its environment variable's (a secret kept out of argv), else undefined. */
function flagOrEnv(
  values: Values,
  name: 'store' | 'backend' | 'redis' | 'admin-token' | 'payments-db' | 'rabbitmq',
): string | undefined {
  const env = process.env[`FLASH_SALE_${name.toUpperCase().replaceAll('-', '_')}`]
  return values[name] ?? (env === '' ? undefined : env)
}

/** The secrets given (URL passwords, raw and decoded; the admin token), for redacting error messages. */
function secretsOf(values: Values): string[] {
  const secrets: string[] = []
  for (const name of ['store', 'backend', 'redis', 'admin-token', 'payments-db', 'rabbitmq'] as const) {
    const value = flagOrEnv(values, name)
    // A URL's password is what sits between the user's ':' and the '@' (host lists included, which URL() refuses).
    const password = name === 'admin-token' ? value : value && /^[^:]+:\/\/[^/@]*?:([^@/]*)@/.exec(value)?.[1]
    if (!password) continue
    secrets.push(password)
    try {
      secrets.push(decodeURIComponent(password))
    } catch {
      // Not percent-encoded: the raw form is the only one.
    }
  }
  return secrets
}

/** Says (on stderr) which secrets were given as flags: `ps` shows them to every user of the machine. */
function warnSecretFlags(values: Values): void {
  for (const name of ['store', 'backend', 'redis', 'admin-token', 'payments-db', 'rabbitmq'] as const) {
    const value = values[name]
    if (value === undefined || (name !== 'admin-token' && redactUrl(value) === value)) continue
    const env = `FLASH_SALE_${name.toUpperCase().replaceAll('-', '_')}`
    console.error(`warning: --${name} holds a secret that ps shows to every user of this machine; prefer ${env}`)
  }
}

async function serve(values: Values): Promise<void> {
  const workers = num(values, 'workers', 1)
  const redisUrl = flagOrEnv(values, 'redis')
  const adminToken = flagOrEnv(values, 'admin-token')
  checkAdminToken(adminToken, '--admin-token (or FLASH_SALE_ADMIN_TOKEN)')
  const maxEventStreams = num(values, 'max-event-streams', 200)
  if (!Number.isInteger(maxEventStreams)) {
    throw new RangeError(`--max-event-streams must be a whole number, received ${String(values['max-event-streams'])}`)
  }
  warnSecretFlags(values)
  const common = {
    storeUrl: flagOrEnv(values, 'store') ?? 'sqlite:./flash-sale.db',
    backendUrl: flagOrEnv(values, 'backend') ?? 'sqlite:./flash-sale-locks.db',
    host: values.host ?? '127.0.0.1',
    lockTtlMs: num(values, 'lock-ttl-ms', 5_000),
    ...(redisUrl === undefined ? {} : { redisUrl }),
    ...(adminToken === undefined ? {} : { adminToken }),
    maxEventStreams,
  }
  const port = num(values, 'port', 3000)
  const running =
    workers <= 1
      ? await startService({ ...common, port }).then((s) => ({ urls: [s.url], close: s.close }))
      : await startCluster({ ...common, workers, basePort: port })
  const reserve = redisUrl === undefined ? 'reserve off: no --redis' : `reserve on ${redactUrl(redisUrl)}`
  // Never the token itself: only whether the admin routes are open to its holder.
  const admin =
    adminToken === undefined
      ? 'admin routes disabled: no --admin-token / FLASH_SALE_ADMIN_TOKEN'
      : 'admin routes need the admin token'
  console.log(
    `flash-sale serving on ${running.urls.join(' ')} (store ${redactUrl(common.storeUrl)}, locks ${redactUrl(common.backendUrl)}, ${reserve}, ${admin})`,
  )
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  await running.close()
}

async function load(values: Values): Promise<boolean> {
  const urls = (values.url ?? 'http://127.0.0.1:3000').split(',').map((u) => u.trim().replace(/\/$/, ''))
  const rows: ResultRow[] = []
  const adminToken = flagOrEnv(values, 'admin-token')
  for (const strategy of strategies(values.strategy)) {
    rows.push(
      await runSale({
        urls,
        strategy,
        stock: num(values, 'stock', 100),
        buyers: num(values, 'buyers', 10_000),
        processes: num(values, 'processes', 2),
        concurrency: num(values, 'concurrency', 64),
        duplicateRate: num(values, 'dup-rate', 0.05),
        ...(values.sale === undefined ? {} : { saleId: values.sale }),
        ...(adminToken === undefined ? {} : { adminToken }),
      }),
    )
  }
  console.log(`\n${formatTable(rows)}\n${LEGEND}\n\n${formatChecks(rows)}`)
  return rows.every((row) => row.checks.every((c) => c.ok))
}

/** The demo's Redis for `reserve`: `--redis`, else a `redis://` lock backend's server, else none. */
function demoRedis(values: Values): { redisUrl?: string } {
  const backend = flagOrEnv(values, 'backend')
  const url = flagOrEnv(values, 'redis') ?? (/^rediss?:\/\//i.test(backend ?? '') ? backend : undefined)
  return url === undefined ? {} : { redisUrl: url }
}

/** `--payments` with its optional payment database and RabbitMQ URLs (flags or FLASH_SALE_PAYMENTS_DB / _RABBITMQ). */
function demoPayments(values: Values): { payments?: { dbUrl?: string; rabbitUrl?: string } } {
  if (values.payments !== true) {
    if (values['payments-db'] !== undefined || values.rabbitmq !== undefined) {
      throw new RangeError('--payments-db and --rabbitmq apply to --payments only')
    }
    return {}
  }
  return {
    payments: {
      ...optional('dbUrl', flagOrEnv(values, 'payments-db')),
      ...optional('rabbitUrl', flagOrEnv(values, 'rabbitmq')),
    },
  }
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string }
}

async function main(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true })
  const command = positionals[0]
  if (values.help === true || command === undefined) {
    console.log(USAGE)
    return command === undefined && values.help !== true ? 2 : 0
  }
  if (command === 'serve') {
    await serve(values)
    return 0
  }
  if (command === 'load') return (await load(values)) ? 0 : 1
  if (command === 'demo') {
    const ok = await runDemo({
      workers: num(values, 'workers', 3),
      buyers: num(values, 'buyers', 10_000),
      stock: num(values, 'stock', 100),
      processes: num(values, 'processes', 2),
      concurrency: num(values, 'concurrency', 64),
      ...(values.strategy === undefined ? {} : { strategies: strategies(values.strategy) }),
      ...optional('backendUrl', flagOrEnv(values, 'backend')),
      ...optional('storeUrl', flagOrEnv(values, 'store')),
      ...demoRedis(values),
      ...demoPayments(values),
    })
    return ok ? 0 : 1
  }
  console.error(`unknown command ${command}\n${USAGE}`)
  return 2
}

const args = process.argv.slice(2)
main(args).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    // Driver errors may quote the URL or the password they were given.
    const secrets = secretsOf(
      parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: false }).values as Values,
    )
    console.error(redactText(error instanceof Error ? error.message : String(error), secrets))
    process.exitCode = 1
  },
)
