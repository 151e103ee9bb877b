import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { backendFromUrl } from './backend-url.js'
import { isLockError, LockError, LockTimeoutError, UnsupportedError } from './errors.js'

describe('backendFromUrl', () => {
  it('opens memory and sqlite backends', async () => {
    const memory = await backendFromUrl('memory:')
    expect(memory.name).toBe('memory')
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-url-'))
    try {
      const sqlite = await backendFromUrl(`sqlite:${join(dir, 'l.db')}`)
      expect(sqlite.capabilities.crossProcess).toBe(true)
      await sqlite.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('says clearly what it cannot open', async () => {
    await expect(backendFromUrl('sqlite:')).rejects.toBeInstanceOf(RangeError)
    await expect(backendFromUrl('ftp://x')).rejects.toThrow(/unknown backend URL scheme/)
    await expect(backendFromUrl(42 as never)).rejects.toBeInstanceOf(TypeError)
  })
})

describe('errors', () => {
  it('carry code, retryable and cause, and are recognised across copies', () => {
    const cause = new Error('socket closed')
    const error = new LockTimeoutError('a', 12.4, { cause })
    expect(error.code).toBe('LOCK_TIMEOUT')
    expect(error.retryable).toBe(true)
    expect(error.cause).toBe(cause)
    expect(error.message).toContain('"a"')
    expect(isLockError(error)).toBe(true)
    const foreign = Object.assign(new Error('x'), { [Symbol.for('latchkey.LockError')]: true })
    expect(isLockError(foreign)).toBe(true)
    expect(isLockError(new Error('x'))).toBe(false)
    expect(isLockError(null)).toBe(false)
    expect(new UnsupportedError('no')).toBeInstanceOf(LockError)
  })
})
