import { describe, expect, it } from 'vitest'
import { curatorPath, curatorZkLayout, latchkeyZkLayout } from './zk-layout.js'
import { lineOf, standingOf } from './zk-nodes.js'

const uuid = '0c6d2f4e-5b7a-4c1d-9e8f-123456789abc'
const seq = (i: number) => String(i).padStart(10, '0')

describe('zk-layout', () => {
  it("curator: names are Curator's protected names (`_c_<uuid>-` + the recipe's lock name)", () => {
    expect(curatorZkLayout.prefix(uuid, 'mutex', 1)).toBe(`_c_${uuid}-lock-`)
    expect(curatorZkLayout.prefix(uuid, 'fair', 1)).toBe(`_c_${uuid}-lock-`)
    expect(curatorZkLayout.prefix(uuid, 'read', 1)).toBe(`_c_${uuid}-__READ__`)
    expect(curatorZkLayout.prefix(uuid, 'write', 1)).toBe(`_c_${uuid}-__WRIT__`)
    expect(curatorZkLayout.prefix(uuid, 'semaphore', 3)).toBe(`_c_${uuid}-lease-`)
    expect(curatorZkLayout.parse(`_c_${uuid}-__WRIT__${seq(7)}`)).toEqual({
      name: `_c_${uuid}-__WRIT__${seq(7)}`,
      owner: uuid,
      kind: 'write',
      order: seq(7),
    })
  })

  it("curator: paths are the key's znodes under the root; a semaphore's leases and internal mutex are under it", () => {
    const ref = { key: 'shop:orders/42', kind: 'mutex' as const }
    expect(curatorZkLayout.lockPath('/locks', ref)).toBe('/locks/shop:orders/42')
    expect(curatorZkLayout.nodesParent('/locks', ref)).toBe('/locks/shop:orders/42')
    expect(curatorZkLayout.gateParent('/locks', ref)).toBeUndefined()
    const sem = { key: 'pool', kind: 'semaphore' as const }
    expect(curatorZkLayout.nodesParent('', sem)).toBe('/pool/leases')
    expect(curatorZkLayout.gateParent('', sem)).toBe('/pool/locks')
    expect(latchkeyZkLayout.nodesParent('/latchkey', sem)).toBe('/latchkey/pool%00semaphore')
    expect(curatorPath('/r', '/a/b')).toBe('/r/a/b')
    expect(curatorPath('/r', 'a%b/./\u0001/\uD83D\uDD12')).toBe('/r/a%25b/%2E/%01/%F0%9F%94%92')
    expect(() => curatorPath('/r', 'a//b')).toThrow(RangeError)
    expect(() => curatorPath('/r', 'a/')).toThrow(/cannot be empty/)
  })

  it("curator: the line is Curator's order, and a reader waits only for writers before it, a writer for anyone", () => {
    const r1 = `_c_${uuid}-__READ__${seq(1)}`
    const w2 = `_c_${uuid}-__WRIT__${seq(2)}`
    const r3 = `_c_${uuid}-__READ__${seq(3)}`
    const line = lineOf([r3, w2, r1], curatorZkLayout.parse)
    expect(line.map((n) => n.name)).toEqual([r1, w2, r3])
    expect(standingOf(line, 0, 1).eligible).toBe(true)
    expect(standingOf(line, 1, 1).eligible).toBe(false)
    expect(standingOf(line, 2, 1).eligible).toBe(false)
    expect(standingOf(line, 2, 1).watch.map((n) => n.name)).toEqual([w2])
  })

  it('curator: a child that is no sequential node sorts by its whole name, after every sequence (as Curator sorts it)', () => {
    const lock = `_c_${uuid}-lock-${seq(9)}`
    const kazoo = `abcdef__lock__${seq(1)}`
    const line = lineOf(['leases', lock, kazoo], curatorZkLayout.parse)
    expect(line.map((n) => n.name)).toEqual([kazoo, lock, 'leases'])
    expect(line.map((n) => n.foreign === true)).toEqual([true, false, true])
    expect(standingOf(line, 1, 1).eligible).toBe(false)
  })
})
