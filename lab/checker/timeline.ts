import type { HistoryEvent } from '../lib/history.js'
import { subject } from './load.js'

const ROW = 18
const LEFT = 40
const WIDTH = 1_200

/**
 * A timeline figure of a run (SVG): one row per client with its critical sections as the referee saw them
 * (red where another client was inside too), grey bands while the client was paused or after it was killed,
 * a black tick for each accepted write and a red cross for each write the fence rejected.
 */
export function timelineSvg(events: HistoryEvent[], startedAt: number, endedAt: number, title: string): string {
  const clients = [...new Set(events.filter((e) => e.proc !== 'nemesis').map(subject))]
    .filter((c) => /^c\d+$/.test(c))
    .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))
  const x = (t: number): number => LEFT + ((t - startedAt) / Math.max(1, endedAt - startedAt)) * (WIDTH - LEFT - 10)
  const y = (client: string): number => 24 + clients.indexOf(client) * ROW
  const shapes: string[] = []
  const open = new Map<string, number>()
  const sections: { who: string; from: number; to: number }[] = []
  const pausedAt = new Map<string, number>()
  const band = (client: string, from: number, to: number, fill: string): void => {
    shapes.push(
      `<rect x="${x(from).toFixed(1)}" y="${y(client) - 2}" width="${Math.max(1, x(to) - x(from)).toFixed(1)}" height="${ROW}" fill="${fill}" fill-opacity="0.6"/>`,
    )
  }
  for (const e of events) {
    const who = subject(e)
    if (!clients.includes(who)) continue
    if (
      e.proc === 'nemesis' &&
      (e.f === 'pause' || e.f === 'partition' || e.f === 'stall-reply' || e.f === 'majority-split')
    )
      pausedAt.set(who, e.t)
    else if (e.proc === 'nemesis' && e.f === 'resume') band(who, pausedAt.get(who) ?? e.t, e.t, '#ccc')
    else if (e.proc === 'nemesis' && e.f === 'heal') band(who, pausedAt.get(who) ?? e.t, e.t, '#fc8')
    else if (e.proc === 'nemesis' && e.f === 'kill') band(who, e.t, endedAt, '#eee')
    else if (e.proc !== 'referee') continue
    else if (e.f === 'enter') open.set(who, e.t)
    else if (e.f === 'exit' || e.f === 'died') {
      const from = open.get(who)
      open.delete(who)
      if (from !== undefined) sections.push({ who, from, to: e.t })
    } else if (e.f === 'write') {
      const cx = x(e.t).toFixed(1)
      shapes.push(
        e.accepted === true
          ? `<line x1="${cx}" x2="${cx}" y1="${y(who)}" y2="${y(who) + ROW - 4}" stroke="#000"/>`
          : `<text x="${cx}" y="${y(who) + ROW - 5}" fill="#d00" font-size="14" text-anchor="middle">×</text>`,
      )
    }
  }
  for (const { who, from, to } of sections) {
    const overlapped = sections.some((o) => o.who !== who && o.from < to && o.to > from)
    shapes.unshift(
      `<rect x="${x(from).toFixed(1)}" y="${y(who) + 2}" width="${Math.max(1, x(to) - x(from)).toFixed(1)}" height="${ROW - 8}" fill="${overlapped ? '#d33' : '#48c'}"/>`,
    )
  }
  const labels = clients.map((c) => `<text x="4" y="${y(c) + ROW - 6}" font-size="11">${c}</text>`)
  const height = 34 + clients.length * ROW
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif">`,
    `<title>${title.replace(/[<&]/g, '')}</title>`,
    `<text x="4" y="14" font-size="12">${title.replace(/[<&]/g, '')}: sections (red: overlapped), grey: paused/killed, orange: cut off from the lock service, | write accepted, × rejected</text>`,
    ...shapes,
    ...labels,
    '</svg>',
    '',
  ].join('\n')
}
