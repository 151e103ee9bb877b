/**
 * How every Redis script of latchkey (and of an app built on it) is kept and run: the source is a `.lua` file
 * beside the code that calls it, read once when the module loads; a call is EVALSHA, and EVAL (which also loads
 * the script) only when the server answers NOSCRIPT (a restarted server, a failover, SCRIPT FLUSH); the reply
 * goes through the script's own `reply` function, so each caller sees one typed shape.
 *
 * Read at load rather than generated into a `.ts` module: the `.lua` file is the only copy, so there is nothing
 * to regenerate or to check is current, and editors and Lua linters see plain Lua. The price: the build copies
 * the `.lua` files into `dist` (package.json `build`), and a bundler that inlines `dist` must copy them too.
 * Shared code is a part the scripts `--#include`, not a checked-in expanded copy of each script: the copies
 * would repeat every part in every script that uses it (test/redis-scripts.test.ts checks the expansion).
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { adaptClient, isNoScript, type RedisClientLike, type RedisCommander } from './client-adapter.js'

/** A Lua script with its SHA1; `Reply` is what {@link evalScript} resolves to. */
export interface LuaScript<Reply = unknown> {
  /** Names the script in error messages. */
  readonly name: string
  readonly source: string
  /** SHA1 of `source`, for EVALSHA. */
  readonly sha: string
  /** Turns the server's reply into the script's typed reply. */
  readonly reply: (raw: unknown) => Reply
}

/** The two calls a script needs; the backend's adapted client (ioredis or node-redis) has them. */
export interface ScriptRunner {
  /** EVALSHA; rejects with the NOSCRIPT reply error when the server does not have the script. */
  evalsha(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown>
  /** EVAL, which also loads the script for later EVALSHAs. */
  eval(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown>
}

// A whole line `--#include name.lua`: a Lua comment, so each part is still valid Lua on its own.
const INCLUDE = /^--#include ([\w.-]+\.lua)[ \t]*$/gm

/**
 * The text of the `.lua` file at `url`, with every `--#include <file>.lua` line replaced by that file (a path
 * relative to `url`; included files may include others). Throws when a file is missing (a build that did not
 * copy the `.lua` files: the error names the path).
 *
 * @example
 * const source = readLuaFile(new URL('./acquire.lua', import.meta.url))
 */
export function readLuaFile(url: URL): string {
  return expand(url, 0)
}

function expand(url: URL, depth: number): string {
  if (depth > 8) throw new RangeError(`latchkey: --#include nests deeper than 8 files at ${url.pathname}`)
  return readFileSync(url, 'utf8').replace(INCLUDE, (_, name: string) =>
    expand(new URL(name, url), depth + 1).trimEnd(),
  )
}

const asIs = (raw: unknown): unknown => raw

/**
 * A script from its source; `reply` (default: the raw reply) turns what Redis answers into `Reply`.
 *
 * @example
 * const ADMIT = luaScript('admit', readLuaFile(new URL('./admit.lua', import.meta.url)), (raw) => raw as [number, string])
 */
export function luaScript<Reply = unknown>(
  name: string,
  source: string,
  reply?: (raw: unknown) => Reply,
): LuaScript<Reply> {
  if (typeof source !== 'string' || source.trim() === '') {
    throw new TypeError(`latchkey: script ${name} needs its Lua source, received ${JSON.stringify(source)}`)
  }
  const sha = createHash('sha1').update(source).digest('hex')
  return Object.freeze({ name, source, sha, reply: (reply ?? asIs) as (raw: unknown) => Reply })
}

/**
 * Runs `script` on `runner`: EVALSHA, then EVAL on NOSCRIPT; resolves to the script's typed reply. Other errors
 * (connection, error replies) reject unchanged.
 */
export function runScript<Reply>(
  runner: ScriptRunner,
  script: LuaScript<Reply>,
  keys: readonly string[],
  args: readonly string[],
): Promise<Reply> {
  return runner.evalsha(script, keys, args).then(script.reply, (error: unknown) => {
    if (!isNoScript(error)) throw error
    return runner.eval(script, keys, args).then(script.reply)
  })
}

const runners = new WeakMap<object, RedisCommander>()

/**
 * Runs `script` with an app's ioredis or node-redis client (see {@link runScript}). Throws `TypeError` for a
 * client that is neither.
 *
 * @example
 * const RESERVE = luaScript('reserve', readLuaFile(new URL('./reserve.lua', import.meta.url)), toOutcome)
 * const outcome = await evalScript(redis, RESERVE, [stockKey], [userId])
 */
export function evalScript<Reply>(
  client: RedisClientLike,
  script: LuaScript<Reply>,
  keys: readonly string[],
  args: readonly string[],
): Promise<Reply> {
  let runner = typeof client === 'object' && client !== null ? runners.get(client) : undefined
  if (runner === undefined) {
    try {
      runner = adaptClient(client)
    } catch {
      throw new TypeError(
        `latchkey: evalScript needs an ioredis or a connected node-redis client, received ${typeof client}`,
      )
    }
    runners.set(client, runner)
  }
  return runScript(runner, script, keys, args)
}
