/**
 * The per-node Lua scripts of RedLock, one `.lua` file each. Each runs on one independent master and touches one
 * lock (its key, and for ACQUIRE, RELEASE and FORCE_DELETE its line of waiters); the owner and the TTL always travel
 * as ARGV, never inside the source. Replies are read by votes.ts.
 */
import { type LuaScript, luaScript, readLuaFile } from '../../redis/lua-script.js'

const load = (name: string): LuaScript => luaScript(name, readLuaFile(new URL(`./${name}.lua`, import.meta.url)))

/** SET NX PX, idempotent per owner, a waiting head taking its place in line: `{1}` granted, `{2}` already ours, `{0, pttl, holder}` held. */
export const ACQUIRE = load('acquire')
/** Places a waiter in the lock's line without taking the lock: 1. */
export const PLACE = load('place')
/** PEXPIRE while the key holds our value: 1 renewed, 0 not ours. */
export const RENEW = load('renew')
/** Compare-and-delete, or hand on to the first waiter in line: 1 ours, 0 not ours. */
export const RELEASE = load('release')
/** 1 when the key exists on this node. */
export const EXISTS = load('exists')
/** Unconditional DEL of the lock and its line (administrative force release): 1 when the lock's key was deleted. */
export const FORCE_DELETE = load('force-delete')
/** Reads the key without touching it (operator inspection): `{owner or '', pttl}`. */
export const PEEK = load('peek')
