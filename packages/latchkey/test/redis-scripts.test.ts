/**
 * How latchkey keeps and runs its Redis scripts (src/backends/redis/lua-script.ts): `.lua` files with their
 * `--#include`s expanded, EVALSHA with EVAL on NOSCRIPT, each reply through the script's own decoder. Against
 * the shared Redis, with both client libraries.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { adaptClient, type RedisClientLike } from '../src/backends/redis/client-adapter.js'
import { evalScript, luaScript, readLuaFile, runScript, type ScriptRunner } from '../src/backends/redis/lua-script.js'
import { scriptsFor } from '../src/backends/redis/scripts/index.js'
import { ioredisClient, nodeRedisClient } from './support/redis-backend-module.js'

const ioredis = ioredisClient()
const nodeRedis = await nodeRedisClient()
const clients: [string, RedisClientLike][] = [
  ['ioredis', ioredis],
  ['node-redis', nodeRedis],
]
const scriptsDir = new URL('../src/backends/redis/scripts/', import.meta.url)
const dir = mkdtempSync(join(tmpdir(), 'latchkey-lua-'))

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  ioredis.disconnect()
  await nodeRedis.quit()
})

/** A script no server has seen yet (its source, hence its SHA, is new). */
const unseen = (body: string) => `-- ${randomUUID()}\n${body}`

/** `runner` with a log of the commands it sent. */
function logged(runner: ScriptRunner, log: string[]): ScriptRunner {
  return {
    evalsha(s, k, a) {
      log.push('EVALSHA')
      return runner.evalsha(s, k, a)
    },
    eval(s, k, a) {
      log.push('EVAL')
      return runner.eval(s, k, a)
    },
  }
}

describe('the .lua files', () => {
  it('every script of the Redis backend is its file with each --#include replaced by the part it names', () => {
    const scripts = scriptsFor(1234)
    for (const script of Object.values(scripts)) {
      expect(script.source, script.name).toMatch(/^local FENCE_IDLE_MS, FENCE_REFRESH = 1234, (true|false)\n/)
      expect(script.source, script.name).not.toContain('--#include')
    }
    const base = readFileSync(new URL('base.lua', scriptsDir), 'utf8').trimEnd()
    const acquire = readFileSync(new URL('acquire.lua', scriptsDir), 'utf8')
    expect(acquire).toContain('--#include base.lua\n')
    expect(scripts.acquire.source).toContain(base)
    // The short acquire that leaves the fencing counter's expiry alone is the same file, one literal apart.
    expect(scripts.acquireMutexKeepFence.source).toBe(scripts.acquireMutex.source.replace(', true\n', ', false\n'))
    expect(scripts.acquire.source).toBe(
      `local FENCE_IDLE_MS, FENCE_REFRESH = 1234, true\n${readLuaFile(new URL('acquire.lua', scriptsDir))}`,
    )
  })

  it('every part in scripts/ is included by some script, so none is dead', () => {
    const sources = Object.values(scriptsFor(0)).map((s) => s.source)
    for (const file of readdirSync(scriptsDir).filter((f) => f.endsWith('.lua'))) {
      const text = readLuaFile(new URL(file, scriptsDir)).trimEnd()
      expect(
        sources.some((s) => s.includes(text)),
        file,
      ).toBe(true)
    }
  })

  it('includes nest, relative to the including file; a missing file fails naming it, a cycle fails', () => {
    writeFileSync(join(dir, 'inner.lua'), 'local inner = 1\n')
    writeFileSync(join(dir, 'middle.lua'), '--#include inner.lua\nlocal middle = inner + 1\n')
    writeFileSync(join(dir, 'outer.lua'), '--#include middle.lua\nreturn middle\n')
    expect(readLuaFile(pathToFileURL(join(dir, 'outer.lua')))).toBe(
      'local inner = 1\nlocal middle = inner + 1\nreturn middle\n',
    )
    writeFileSync(join(dir, 'broken.lua'), '--#include nowhere.lua\n')
    expect(() => readLuaFile(pathToFileURL(join(dir, 'broken.lua')))).toThrow(/nowhere\.lua/)
    writeFileSync(join(dir, 'loop.lua'), '--#include loop.lua\n')
    expect(() => readLuaFile(pathToFileURL(join(dir, 'loop.lua')))).toThrow(RangeError)
  })

  it('a script without source, or a client that is not one, is a TypeError naming it', () => {
    expect(() => luaScript('empty', '  \n')).toThrow(/script empty needs its Lua source/)
    const script = luaScript('one', 'return 1')
    expect(() => evalScript({} as RedisClientLike, script, [], [])).toThrow(/evalScript needs an ioredis/)
  })
})

describe.each(clients)('running a script with %s', (_, client) => {
  it('EVALSHA first; EVAL only when the server answers NOSCRIPT, and then EVALSHA finds it', async () => {
    const script = luaScript('echo', unseen('return ARGV[1]'))
    const log: string[] = []
    const runner = logged(adaptClient(client), log)
    expect(await runScript(runner, script, [], ['a'])).toBe('a')
    expect(log).toEqual(['EVALSHA', 'EVAL'])
    expect(await runScript(runner, script, [], ['b'])).toBe('b')
    expect(log).toEqual(['EVALSHA', 'EVAL', 'EVALSHA'])
  })

  it("resolves to the script's decoded reply, with its keys and arguments in place", async () => {
    const key = `latchkey-lua-${randomUUID()}`
    const script = luaScript(
      'pair',
      unseen("redis.call('SET', KEYS[1], ARGV[1]) return { 1, redis.call('GET', KEYS[1]) }"),
      (raw) => {
        const [code, value] = raw as [number, string]
        return { ok: code === 1, value }
      },
    )
    try {
      expect(await evalScript(client, script, [key], ['v'])).toEqual({ ok: true, value: 'v' })
    } finally {
      await evalScript(client, luaScript('del', "return redis.call('DEL', KEYS[1])"), [key], [])
    }
  })

  it('an error reply other than NOSCRIPT rejects unchanged, without an EVAL', async () => {
    const script = luaScript('fails', "return redis.error_reply('latchkey-test: refused')")
    await evalScript(client, script, [], []).catch(() => undefined) // loaded now
    const log: string[] = []
    await expect(runScript(logged(adaptClient(client), log), script, [], [])).rejects.toThrow('latchkey-test: refused')
    expect(log).toEqual(['EVALSHA'])
  })
})
