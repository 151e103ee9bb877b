import { describe, expect, it } from 'vitest'
import { BackendUnavailableError } from '../errors.js'
import { requirePeer } from './optional-peer.js'

describe('requirePeer', () => {
  it('loads an installed peer and names the install command for a missing one', () => {
    expect(typeof requirePeer<object>('better-sqlite3', 'sqlite', 'better-sqlite3 package')).toBe('function')
    const error = (() => {
      try {
        requirePeer('latchkey-no-such-package', 'demo', 'no-such package: npm install no-such')
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).toBe('demo backend needs the no-such package: npm install no-such')
  })
})
