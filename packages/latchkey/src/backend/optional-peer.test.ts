import { describe, expect, it } from 'vitest'
import { isLockError, UnsupportedError } from '../errors.js'
import { requirePeer } from './optional-peer.js'

function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (e) {
    return e
  }
  throw new Error('expected a throw')
}

describe('requirePeer', () => {
  it('loads an installed peer', () => {
    expect(typeof requirePeer<object>('better-sqlite3', 'sqlite', 'better-sqlite3 package')).toBe('function')
  })

  it('a missing peer is a non-retryable UnsupportedError naming the install command', () => {
    const error = thrown(() => requirePeer('latchkey-no-such-package', 'demo', 'no-such package: npm install no-such'))
    expect(error).toBeInstanceOf(UnsupportedError)
    expect(isLockError(error) && error.retryable).toBe(false)
    expect(isLockError(error) && error.code).toBe('UNSUPPORTED')
    expect((error as Error).message).toBe('demo backend needs the no-such package: npm install no-such')
    expect((error as Error).cause).toMatchObject({ code: 'MODULE_NOT_FOUND' })
  })
})
