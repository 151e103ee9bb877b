import { afterEach, describe, expect, it, vi } from 'vitest'
import { BDP_PING, BDP_PING_ACK_MS, BDP_PING_HOLD_MS, PING_ACK_MS, PingAcks } from './ping-acks.js'

const OTHER = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0])
/** The payloads of the PING ACK frames (9-byte header + 8 bytes each) in one write. */
const acked = (out: Buffer) =>
  Array.from({ length: Math.floor(out.length / 17) }, (_, i) => out.subarray(i * 17 + 9, i * 17 + 17))

describe('PING ACKs', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it("grpc-go's bandwidth-delay PING is held 500 ms, then rides on the next frame out (alone at 1 s); any other PING 10 ms", () => {
    vi.useFakeTimers()
    const writes: Buffer[] = []
    const acks = new PingAcks((out) => writes.push(out))
    const call = Buffer.from('call')
    acks.add(BDP_PING)
    // Held: a frame out within the hold leaves without it (grpc-go pings again only once it is acked).
    vi.advanceTimersByTime(BDP_PING_HOLD_MS - 1)
    expect(acks.before(call)).toBe(call)
    expect(writes).toEqual([])
    // Then the next frame out carries it.
    vi.advanceTimersByTime(1)
    expect(writes).toEqual([])
    const out = acks.before(call)
    expect(acked(out)[0]?.equals(BDP_PING)).toBe(true)
    expect(out.subarray(17).equals(call)).toBe(true)
    expect(acks.before(call)).toBe(call)
    vi.advanceTimersByTime(BDP_PING_ACK_MS)
    expect(writes).toEqual([])
    // With nothing to send, it goes alone after BDP_PING_ACK_MS.
    acks.add(BDP_PING)
    vi.advanceTimersByTime(BDP_PING_ACK_MS - 1)
    expect(writes).toEqual([])
    vi.advanceTimersByTime(1)
    expect(writes.map((w) => acked(w).map((p) => p.equals(BDP_PING)))).toEqual([[true]])
    acks.stop()
  })

  it('another PING behind a waiting bandwidth-delay PING brings both ACKs forward to 10 ms', () => {
    vi.useFakeTimers()
    const writes: Buffer[] = []
    const acks = new PingAcks((out) => writes.push(out))
    acks.add(BDP_PING)
    acks.add(OTHER)
    vi.advanceTimersByTime(PING_ACK_MS - 1)
    expect(writes).toEqual([])
    vi.advanceTimersByTime(1)
    expect(writes.length).toBe(1)
    expect(acked(writes[0] as Buffer).map((p) => p.equals(BDP_PING))).toEqual([true, false])
    // A bandwidth-delay PING behind a short wait does not push it back.
    acks.add(OTHER)
    acks.add(BDP_PING)
    vi.advanceTimersByTime(PING_ACK_MS)
    expect(writes.length).toBe(2)
    acks.stop()
  })
})
