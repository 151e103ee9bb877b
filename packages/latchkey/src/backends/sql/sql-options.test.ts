import { describe, expect, it } from 'vitest'
import { mysqlBackend } from '../mysql/index.js'
import { postgresBackend } from '../postgres/index.js'
import { backendLabel, strategyOption } from './sql-options.js'
import { withClock } from './table-statements.js'

describe('strategyOption', () => {
  it('unset is the first strategy (the default); a listed one is kept', () => {
    expect(strategyOption('mysqlBackend', ['table', 'get_lock'], undefined)).toBe('table')
    expect(strategyOption('mysqlBackend', ['table', 'get_lock'], 'get_lock')).toBe('get_lock')
  })

  it('anything else is a RangeError naming the factory, the choices and the value received', () => {
    expect(() => strategyOption('postgresBackend', ['table', 'advisory'], 'tabel')).toThrow(
      new RangeError('latchkey: postgresBackend strategy must be one of table, advisory, received tabel'),
    )
  })

  it('both factories check it before touching the pool', () => {
    // A pool that fails any use: the RangeError must come first.
    const pool = new Proxy({}, { get: () => expect.unreachable('the pool was used') })
    expect(() => mysqlBackend({ pool, strategy: 'advisory' } as never)).toThrow(/mysqlBackend strategy must be one of/)
    expect(() => postgresBackend({ pool, strategy: 'get_lock' } as never)).toThrow(
      /postgresBackend strategy must be one of/,
    )
  })
})

describe('backendLabel', () => {
  it('names the server when the pool tells it', () => {
    expect(backendLabel('mysql', '127.0.0.1:3306')).toBe('mysql backend at 127.0.0.1:3306')
    expect(backendLabel('postgres', undefined)).toBe('postgres backend')
  })
})

describe('withClock', () => {
  it('puts the dialect clock expression in place of every NOW_MS, and freezes the result', () => {
    const sql = withClock({ a: 'SELECT NOW_MS', b: 'WHERE x > NOW_MS AND y < NOW_MS' }, 'now()')
    expect(sql).toEqual({ a: 'SELECT now()', b: 'WHERE x > now() AND y < now()' })
    expect(Object.isFrozen(sql)).toBe(true)
  })
})
