import { describe, expect, it } from 'vitest'
import { ZkFrames } from './zk-frames.js'

const noCorruption = (): void => {
  throw new Error('no corrupt frame expected')
}

const frame = (...bytes: number[]): Buffer => {
  const b = Buffer.alloc(4 + bytes.length)
  b.writeInt32BE(bytes.length, 0)
  Buffer.from(bytes).copy(b, 4)
  return b
}

describe('zookeeper frames', () => {
  it('hands on each whole frame of a chunk, and a frame cut by read boundaries once it is whole', () => {
    const got: number[][] = []
    const frames = new ZkFrames((f) => got.push([...f]), noCorruption)
    const a = frame(1, 2, 3)
    const b = frame(4)
    const c = frame(5, 6)
    const all = Buffer.concat([a, b, c])
    frames.push(all.subarray(0, 9), () => false)
    expect(got).toEqual([[...a]])
    frames.push(all.subarray(9, 11), () => false)
    expect(got).toEqual([[...a]])
    frames.push(all.subarray(11), () => false)
    expect(got).toEqual([[...a], [...b], [...c]])
  })

  it('drops the rest of a chunk once the connection says it stopped', () => {
    const got: Buffer[] = []
    const frames = new ZkFrames((f) => got.push(f), noCorruption)
    frames.push(Buffer.concat([frame(1), frame(2)]), () => got.length > 0)
    expect(got).toHaveLength(1)
  })

  it('stops at a negative length (a garbled stream) instead of reading backwards', () => {
    const got: Buffer[] = []
    let corrupt = 0
    const frames = new ZkFrames(
      (f) => got.push(f),
      () => corrupt++,
    )
    const bad = Buffer.alloc(8)
    bad.writeInt32BE(-5, 0)
    frames.push(Buffer.concat([frame(1), bad, frame(2)]), () => false)
    expect(got).toHaveLength(1)
    expect(corrupt).toBe(1)
  })
})
