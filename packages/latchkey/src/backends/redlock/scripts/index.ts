/**
 * The per-node Lua scripts of RedLock, one `.lua` file each. Each runs on one independent master and touches one
 * key; the owner and the TTL always travel as ARGV, never inside the source. Replies are read by votes.ts.
 */
import { type LuaScript, luaScript, readLuaFile } from '../../redis/lua-script.js'

const load = (name: string): LuaScript => luaScript(name, readLuaFile(new URL(`./${name}.lua`, import.meta.url)))

/** SET NX PX, idempotent per owner: `{1}` granted here, `{0, pttl, holder}` held by another. */
export const ACQUIRE = load('acquire')
/** PEXPIRE while the key holds our value: 1 renewed, 0 not ours. */
export const RENEW = load('renew')
/** Compare-and-delete: 1 deleted, 0 not ours. */
export const RELEASE = load('release')
/** 1 when the key exists on this node. */
export const EXISTS = load('exists')
/** Unconditional DEL (administrative force release): 1 when something was deleted. */
export const FORCE_DELETE = load('force-delete')
/** Reads the key without touching it (operator inspection): `{owner or '', pttl}`. */
export const PEEK = load('peek')
