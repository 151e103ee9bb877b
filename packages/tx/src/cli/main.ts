/**
 * The `latchkey-tx` command: `serve` (the DTM-compatible coordinator service) and the admin commands `list`,
 * `show GID`, `retry GID` (alias `replay GID`, the word operators of notifications look for), `abort GID`, each
 * with `--store URL` (default `sqlite:./latchkey-tx.db`) and `--json`.
 */
import { parseArgs } from 'node:util'
import { describe } from '../errors.js'
import { serve } from '../server/serve.js'
import { TX_KINDS, type TxKind, type TxStatus } from '../types.js'
import { list, manual, show } from './admin.js'
import { listTable, showText } from './format.js'

const KINDS = TX_KINDS

const USAGE = `usage:
  latchkey-tx serve [--store URL] [--port 36789] [--host 0.0.0.0] [--retry-first-ms N] [--retry-max-ms N]
                    [--retry-attempts N] [--lease-ttl-ms N] [--recover-every-ms N] [--timeout-to-fail-s N]
  latchkey-tx list  [--store URL] [--status S] [--kind saga|tcc|msg|notify|3pc|xa] [--limit N] [--all] [--json]
  latchkey-tx show  GID [--store URL] [--json]
  latchkey-tx retry GID [--store URL] [--json]
  latchkey-tx replay GID [--store URL] [--json]   (retry: resends a parked notification on a fresh schedule)
  latchkey-tx abort GID [--store URL] [--json]
store URL: sqlite:./file.db (default sqlite:./latchkey-tx.db), postgres://..., mysql://...`

const OPTIONS = {
  store: { type: 'string', default: 'sqlite:./latchkey-tx.db' },
  port: { type: 'string', default: '36789' },
  host: { type: 'string' },
  status: { type: 'string' },
  kind: { type: 'string' },
  limit: { type: 'string' },
  all: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  'retry-first-ms': { type: 'string' },
  'retry-max-ms': { type: 'string' },
  'retry-attempts': { type: 'string' },
  'lease-ttl-ms': { type: 'string' },
  'recover-every-ms': { type: 'string' },
  'timeout-to-fail-s': { type: 'string' },
} as const

class UsageError extends Error {}

function int(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number, received ${value}`)
  return n
}

const jsonText = (value: unknown) =>
  JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)

/** Runs the command line `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: readonly string[], out = process.stdout, err = process.stderr): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true })
  } catch (error) {
    err.write(`${describe(error)}\n${USAGE}\n`)
    return 2
  }
  const { values: v, positionals } = parsed
  const [command, gid] = positionals
  if (v.help === true || command === undefined) {
    ;(command === undefined && v.help !== true ? err : out).write(`${USAGE}\n`)
    return v.help === true ? 0 : 2
  }
  try {
    switch (command) {
      case 'serve':
        return await runServe(v, out)
      case 'list': {
        if (v.kind !== undefined && !KINDS.includes(v.kind as TxKind)) {
          throw new UsageError(`--kind must be one of ${KINDS.join(', ')}, received ${v.kind}`)
        }
        const rows = await list({
          store: v.store,
          status: v.status as TxStatus | undefined,
          kind: v.kind as TxKind | undefined,
          limit: int('limit', v.limit),
          all: v.all,
        })
        out.write(`${v.json === true ? jsonText(rows) : listTable(rows)}\n`)
        return 0
      }
      case 'show': {
        if (gid === undefined) throw new UsageError('show needs a GID')
        const shown = await show(v.store, gid)
        if (shown === undefined) {
          err.write(`no transaction ${gid} in the store\n`)
          return 1
        }
        const { tx, registered } = shown
        const json = registered === undefined ? tx : { ...tx, registered }
        out.write(`${v.json === true ? jsonText(json) : showText(tx, registered)}\n`)
        return 0
      }
      case 'retry':
      case 'replay':
      case 'abort': {
        if (gid === undefined) throw new UsageError(`${command} needs a GID`)
        const r = await manual(v.store, gid, command === 'abort' ? 'abort' : 'retry')
        const result =
          typeof r === 'string'
            ? { gid, requested: command, message: r }
            : { gid: r.gid, status: r.status, ...(r.error === undefined ? {} : { error: r.error.message }) }
        out.write(
          `${v.json === true ? jsonText(result) : typeof r === 'string' ? `${gid}: ${r}` : `${r.gid}: ${r.status}${r.error === undefined ? '' : ` (${r.error.message})`}`}\n`,
        )
        return 0
      }
      default:
        throw new UsageError(`unknown command ${command}`)
    }
  } catch (error) {
    err.write(`latchkey-tx ${command}: ${describe(error)}\n${error instanceof UsageError ? `${USAGE}\n` : ''}`)
    return error instanceof UsageError ? 2 : 1
  }
}

async function runServe(v: Record<string, string | boolean | undefined>, out: NodeJS.WritableStream): Promise<number> {
  const s = (name: string) => v[name] as string | undefined
  const retry = {
    ...(s('retry-first-ms') === undefined ? {} : { firstMs: int('retry-first-ms', s('retry-first-ms')) }),
    ...(s('retry-max-ms') === undefined ? {} : { maxMs: int('retry-max-ms', s('retry-max-ms')) }),
    ...(s('retry-attempts') === undefined ? {} : { attempts: int('retry-attempts', s('retry-attempts')) }),
  }
  const lease = int('lease-ttl-ms', s('lease-ttl-ms'))
  const every = int('recover-every-ms', s('recover-every-ms'))
  const timeout = int('timeout-to-fail-s', s('timeout-to-fail-s'))
  const server = await serve({
    store: s('store') ?? 'sqlite:./latchkey-tx.db',
    port: int('port', s('port')) ?? 36789,
    ...(s('host') === undefined ? {} : { host: s('host') as string }),
    retry: retry as { firstMs?: number; maxMs?: number; attempts?: number },
    ...(lease === undefined ? {} : { leaseTtlMs: lease }),
    ...(every === undefined ? {} : { recoverEveryMs: every }),
    ...(timeout === undefined ? {} : { defaultTimeoutToFailS: timeout }),
  })
  out.write(`latchkey-tx serve: listening on port ${server.port}\n`)
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  await server.close()
  return 0
}
