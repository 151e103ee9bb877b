/**
 * The `latchkey` command: see and break locks on any backend URL, and measure a backend.
 * Exit codes: 0 done, 1 the backend failed (unreachable, refused), 2 bad usage (unknown command or option, bad
 * URL, missing confirmation). Errors print their message only, with any password in a URL hidden.
 */
import { createInterface } from 'node:readline/promises'
import { parseArgs } from 'node:util'
import type { Backend } from '../backend/types.js'
import { backendFromUrl } from '../backend-url.js'
import { createLocks, type Locks } from '../core/locks.js'
import { isLockError } from '../errors.js'
import { redactText, redactUrl } from '../redact-url.js'
import { type BenchResult, bench } from './bench.js'
import { inspectText, jsonText, listText, table } from './format.js'
import { watch } from './watch.js'

export const USAGE = `usage:
  latchkey inspect URL NAME   holders (owner, kind, token, expiry) and waiters of one lock
  latchkey list URL [--prefix P] [--limit N]   locks held or waited on (default limit 100)
  latchkey release URL NAME [--yes]   force-release: drop every holder and waiter (asks first)
  latchkey watch URL NAME [--interval-ms N]   print holder and waiter changes until Ctrl-C (default 250 ms)
  latchkey bench URL [--duration-ms N] [--concurrency N]   uncontended + contended run (defaults 2000 ms, 8)
options everywhere: --namespace NS (as createLocks' namespace), --json
URL: sqlite:./file.db, redis://host:port[/db][?layout=redisson], redlock://h1:p1,h2:p2,h3:p3,
     zookeeper://h1:p1[/chroot] (or zk://), etcd://h1:p1, mysql://user@host:port/db[?strategy=get_lock],
     postgres://user@host:port/db[?strategy=advisory], memory: (bench only: it lives in one process)`

const OPTIONS = {
  namespace: { type: 'string' },
  prefix: { type: 'string' },
  limit: { type: 'string' },
  yes: { type: 'boolean', short: 'y' },
  json: { type: 'boolean' },
  'interval-ms': { type: 'string' },
  'duration-ms': { type: 'string' },
  concurrency: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

const COMMANDS = ['inspect', 'list', 'release', 'watch', 'bench'] as const
type Command = (typeof COMMANDS)[number]

/** Bad usage: exit code 2. */
class UsageError extends Error {}

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values']

/** What a command needs besides its arguments (stdin for the confirmation, signals for watch). */
export interface CliIo {
  readonly out: NodeJS.WritableStream
  readonly err: NodeJS.WritableStream
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean }
  /** Aborts on Ctrl-C (SIGINT) or SIGTERM. */
  readonly stop: AbortSignal
}

function int(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n < min)
    throw new UsageError(`--${name} must be a whole number >= ${min}, received ${value}`)
  return n
}

/** The message of an error, without a stack; a URL's password hidden. */
function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return redactText(text)
}

/** `zk://` is accepted as `zookeeper://` (zkCli's habit). */
function normalUrl(url: string): string {
  return url.startsWith('zk://') ? `zookeeper://${url.slice(5)}` : url
}

/** Opens the backend, mapping a bad URL (TypeError / RangeError before any I/O) to a usage error. */
async function open(url: string, command: Command): Promise<Backend> {
  if (url.startsWith('memory:') && command !== 'bench') {
    throw new UsageError(
      `memory: locks live inside one process, and this command runs in a process of its own: it would only ever see its own empty memory. Use memory: with bench only`,
    )
  }
  try {
    return await backendFromUrl(normalUrl(url))
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new UsageError(describe(error))
    throw error
  }
}

/** Asks "yes?" on a TTY; refuses elsewhere unless --yes. */
async function confirm(question: string, io: CliIo): Promise<boolean> {
  if (io.stdin.isTTY !== true) {
    throw new UsageError('release needs --yes when stdin is not a terminal (nobody can confirm)')
  }
  const rl = createInterface({ input: io.stdin, output: io.err })
  try {
    const answer = await rl.question(question)
    return /^y(es)?$/i.test(answer.trim())
  } finally {
    rl.close()
  }
}

function benchText(results: readonly BenchResult[]): string {
  return table(
    ['PHASE', 'ACQUIRERS', 'ACQUISITIONS', 'PER SECOND', 'P50 MS', 'P99 MS'],
    results.map((r) => [
      r.phase,
      String(r.acquirers),
      String(r.acquisitions),
      String(r.perSecond),
      r.p50Ms.toFixed(2),
      r.p99Ms.toFixed(2),
    ]),
  )
}

async function runCommand(command: Command, args: string[], v: Values, io: CliIo): Promise<number> {
  const [url, name] = args
  if (url === undefined) throw new UsageError(`${command} needs a backend URL`)
  const needsName = command === 'inspect' || command === 'release' || command === 'watch'
  if (needsName && name === undefined) throw new UsageError(`${command} needs a lock name`)
  const extra = args.slice(needsName ? 2 : 1)
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`)
  const limit = int('limit', v.limit, 1)
  const intervalMs = int('interval-ms', v['interval-ms'], 10) ?? 250
  const durationMs = int('duration-ms', v['duration-ms'], 1) ?? 2_000
  const concurrency = int('concurrency', v.concurrency, 2) ?? 8
  const backend = await open(url, command)
  const json = v.json === true
  const shown = redactUrl(url)
  let locks: Locks | undefined
  try {
    locks = createLocks({ backend, ...(v.namespace === undefined ? {} : { namespace: v.namespace }) })
    switch (command) {
      case 'inspect': {
        const state = await locks.inspect(name as string)
        io.out.write(
          `${json ? jsonText({ backend: shown, ...state }) : `${inspectText(state)}\n(${backend.name} at ${shown})`}\n`,
        )
        return 0
      }
      case 'list': {
        const found = await locks.list({
          ...(v.prefix === undefined ? {} : { prefix: v.prefix }),
          ...(limit === undefined ? {} : { limit }),
        })
        io.out.write(`${json ? jsonText(found) : listText(found)}\n`)
        return 0
      }
      case 'release': {
        // A backend that cannot inspect can still be force-released; the prompt then names no holders.
        const state = locks.backend.capabilities.inspect
          ? await locks.inspect(name as string)
          : { name: name as string, kind: undefined, holders: [], waiters: [] }
        if (v.yes !== true) {
          const who =
            state.holders.map((h) => h.owner).join(', ') ||
            (locks.backend.capabilities.inspect ? 'nobody' : 'unknown holders')
          const ok = await confirm(
            `Force-release lock ${JSON.stringify(name)} on ${shown} (held by ${who}; ${state.waiters.length} waiting)? Holders lose their lease. [y/N] `,
            io,
          )
          if (!ok) {
            io.err.write('not released\n')
            return 1
          }
        }
        const released = await locks.forceRelease(name as string)
        const result = { name, released, holders: state.holders.length, waiters: state.waiters.length }
        io.out.write(
          `${json ? jsonText(result) : released ? `released ${JSON.stringify(name)}: dropped ${state.holders.length} holder(s) and ${state.waiters.length} waiter(s)` : `${JSON.stringify(name)} was not held`}\n`,
        )
        return 0
      }
      case 'watch':
        await watch(locks, name as string, { intervalMs, json, signal: io.stop }, io.out)
        return 0
      case 'bench': {
        const results = await bench(backend, { durationMs, concurrency, namespace: v.namespace ?? '' })
        io.out.write(
          `${json ? jsonText({ backend: shown, results }) : `${backend.name} at ${shown}\n${benchText(results)}`}\n`,
        )
        return 0
      }
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command satisfies never)}`)
    }
  } finally {
    await locks?.close()
    await backend.close()
  }
}

/** Runs the command line `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const controller = new AbortController()
  const stopNow = () => controller.abort()
  const full: CliIo = {
    out: io.out ?? process.stdout,
    err: io.err ?? process.stderr,
    stdin: io.stdin ?? process.stdin,
    stop: io.stop ?? controller.signal,
  }
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true })
  } catch (error) {
    full.err.write(`latchkey: ${describe(error)}\n${USAGE}\n`)
    return 2
  }
  const { values: v, positionals } = parsed
  const [command, ...args] = positionals
  if (v.help === true || command === undefined) {
    ;(v.help === true ? full.out : full.err).write(`${USAGE}\n`)
    return v.help === true ? 0 : 2
  }
  if (!(COMMANDS as readonly string[]).includes(command)) {
    full.err.write(`latchkey: unknown command ${JSON.stringify(command)}\n${USAGE}\n`)
    return 2
  }
  process.once('SIGINT', stopNow)
  process.once('SIGTERM', stopNow)
  try {
    return await runCommand(command as Command, args, v, full)
  } catch (error) {
    const usage = error instanceof UsageError
    const kind = usage || isLockError(error) ? '' : ' (unexpected)'
    full.err.write(`latchkey ${command}: ${describe(error)}${kind}\n${usage ? 'run latchkey --help for usage\n' : ''}`)
    return usage ? 2 : 1
  } finally {
    process.removeListener('SIGINT', stopNow)
    process.removeListener('SIGTERM', stopNow)
  }
}
