import { describe, expect, it } from 'vitest'
import { mysqlXaLimit } from './mysql-xa.js'

describe('mysqlXaLimit', () => {
  it('accepts servers that keep a prepared branch when its session ends', () => {
    expect(mysqlXaLimit('10.11.19-MariaDB-0+deb12u1')).toBeUndefined()
    expect(mysqlXaLimit('10.5.2-MariaDB')).toBeUndefined()
    expect(mysqlXaLimit('8.0.36')).toBeUndefined()
    expect(mysqlXaLimit('5.7.7-log')).toBeUndefined()
  })

  it('names the version limit of older servers', () => {
    expect(mysqlXaLimit('10.4.32-MariaDB')).toContain('MariaDB 10.5.2 or later')
    expect(mysqlXaLimit('10.5.1-MariaDB')).toContain('MDEV-742')
    expect(mysqlXaLimit('5.7.6')).toContain('MySQL 5.7.7 or later')
    expect(mysqlXaLimit('garbage')).toContain('not one this library knows')
  })
})
