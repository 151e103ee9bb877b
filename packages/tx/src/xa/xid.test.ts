import { describe, expect, it } from 'vitest'
import { mysqlXid, parseMysqlRecoverRow, parsePgXid, pgXid, XA_FORMAT_ID } from './xid.js'

describe('XIDs', () => {
  it('put the gid and the branch in the XID, and read them back from XA RECOVER / pg_prepared_xacts', () => {
    const xid = { gid: 'order:42/a-b', branch: 'b2' }
    expect(mysqlXid(xid)).toBe(`'order:42/a-b', 'b2', ${XA_FORMAT_ID}`)
    expect(parsePgXid(pgXid(xid))).toEqual(xid)
    const row = { formatID: XA_FORMAT_ID, gtrid_length: 12, bqual_length: 2, data: 'order:42/a-bb2' }
    expect(parseMysqlRecoverRow(row)).toEqual(xid)
    expect(parseMysqlRecoverRow({ ...row, data: Buffer.from('order:42/a-bb2') })).toEqual(xid)
  })

  it('ignore XIDs that are not ours', () => {
    expect(parsePgXid('someone-else')).toBeUndefined()
    expect(parsePgXid('lktx:nobranch')).toBeUndefined()
    expect(parsePgXid('lktx:g:')).toBeUndefined()
    expect(parseMysqlRecoverRow({ formatID: 1, gtrid_length: 1, bqual_length: 1, data: 'ab' })).toBeUndefined()
    expect(
      parseMysqlRecoverRow({ formatID: XA_FORMAT_ID, gtrid_length: 5, bqual_length: 2, data: 'ab' }),
    ).toBeUndefined()
  })
})
