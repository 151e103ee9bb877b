import { describe, expect, it } from 'vitest'
import * as F from './h2-frames.js'
import { HeaderBlocks } from './h2-header-blocks.js'

describe('HeaderBlocks', () => {
  it('returns a HEADERS frame with END_HEADERS as a whole block, padding and priority stripped', () => {
    const blocks = new HeaderBlocks()
    // Pad length 2, 5 bytes of priority, the block "ab", 2 bytes of padding.
    const payload = Buffer.from([2, 0, 0, 0, 0, 0, 0x61, 0x62, 0, 0])
    const whole = blocks.headers(F.END_HEADERS | F.PADDED | F.PRIORITY | F.END_STREAM, 3, payload)
    expect(whole).toEqual({ id: 3, endStream: true, block: Buffer.from('ab') })
  })

  it('joins a HEADERS frame and its CONTINUATION frames, and hands the block over only at END_HEADERS', () => {
    const blocks = new HeaderBlocks()
    expect(blocks.headers(0, 5, Buffer.from('ab'))).toBeUndefined()
    expect(blocks.continuation(0, 5, Buffer.from('cd'))).toBeUndefined()
    expect(blocks.continuation(F.END_HEADERS, 5, Buffer.from('ef'))).toEqual({
      id: 5,
      endStream: false,
      block: Buffer.from('abcdef'),
    })
    expect(() => blocks.check(F.DATA)).not.toThrow()
  })

  it('refuses another frame inside a block, and a CONTINUATION of no block or of another stream', () => {
    const blocks = new HeaderBlocks()
    expect(() => blocks.continuation(F.END_HEADERS, 1, Buffer.from('x'))).toThrow('CONTINUATION without HEADERS')
    blocks.headers(0, 1, Buffer.from('a'))
    expect(() => blocks.check(F.DATA)).toThrow('a header block was interrupted')
    expect(() => blocks.check(F.CONTINUATION)).not.toThrow()
    expect(() => blocks.continuation(F.END_HEADERS, 3, Buffer.from('b'))).toThrow('CONTINUATION without HEADERS')
  })
})

describe('SETTINGS and the client preface', () => {
  it('reads back the pairs a SETTINGS frame was written with', () => {
    const written = F.settingsFrame([
      [F.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20],
      [F.SETTINGS_MAX_FRAME_SIZE, 32_768],
    ])
    expect(F.readSettings(written.subarray(F.HEADER_LENGTH))).toEqual([
      [F.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20],
      [F.SETTINGS_MAX_FRAME_SIZE, 32_768],
    ])
  })

  it('starts with the preface, then SETTINGS, then the connection window raised to the asked size', () => {
    const out = F.clientPreface(1 << 20, 1 << 24)
    expect(out.subarray(0, F.PREFACE.length)).toEqual(F.PREFACE)
    const frames: Array<[number, Buffer]> = []
    new F.FrameReader().push(out.subarray(F.PREFACE.length), (type, _flags, _id, payload) => {
      frames.push([type, Buffer.from(payload)])
      return true
    })
    expect(frames.map(([type]) => type)).toEqual([F.SETTINGS, F.WINDOW_UPDATE])
    const [[, settings], [, window]] = frames as [[number, Buffer], [number, Buffer]]
    expect(F.readSettings(settings)).toEqual([
      [F.SETTINGS_ENABLE_PUSH, 0],
      [F.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20],
    ])
    expect(window.readUInt32BE(0)).toBe((1 << 24) - F.DEFAULT_WINDOW)
  })
})
