import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type ActiveEntry, ActiveLeases } from './active-leases.js'

const entry = (): ActiveEntry => ({ activeIndex: -1, forget: async () => undefined })

describe('ActiveLeases', () => {
  it('holds exactly the entries added and not deleted, whatever the order of operations', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat(9)), { maxLength: 200 }), (ops) => {
        const pool = Array.from({ length: 10 }, entry)
        const list = new ActiveLeases()
        const model = new Set<ActiveEntry>()
        for (const [add, i] of ops) {
          const e = pool[i] as ActiveEntry
          if (add) {
            list.add(e)
            model.add(e)
          } else {
            list.delete(e)
            model.delete(e)
          }
        }
        expect(new Set(list.values())).toEqual(model)
        expect(list.size).toBe(model.size)
        for (const e of pool) expect(e.activeIndex >= 0).toBe(model.has(e))
      }),
    )
  })
})
