/**
 * A small SVG bar chart (no dependency): horizontal grouped bars, one group per row, one bar per series,
 * each bar the median with a whisker from min to max, on a linear or log axis.
 */
import type { Spread } from '../lib/stats.js'
import { fmt, fmtAuto } from '../lib/stats.js'

/** A chart's data. */
export interface BarChart {
  readonly title: string
  readonly unit: string
  readonly rows: readonly string[]
  readonly series: readonly string[]
  /** values[row][series]; undefined or NaN leaves the slot empty. */
  readonly values: readonly (readonly (Spread | undefined)[])[]
  readonly log?: boolean
}

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#b07aa1', '#9c755f']
const BAR = 11
const GAP = 8
const LABEL_W = 330
const PLOT_W = 470

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

function axis(values: readonly number[], log: boolean): { scale(v: number): number; ticks: number[] } {
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0))
  const hi = Math.max(1e-9, ...finite)
  if (!log) {
    const step = 10 ** Math.floor(Math.log10(hi)) / (hi / 10 ** Math.floor(Math.log10(hi)) < 2.5 ? 2 : 1)
    const top = Math.ceil(hi / step) * step
    const ticks = Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step)
    return { scale: (v) => (Math.max(0, v) / top) * PLOT_W, ticks }
  }
  const lo = 10 ** Math.floor(Math.log10(Math.min(hi, ...finite)))
  const top = 10 ** Math.ceil(Math.log10(hi))
  const decades = Math.max(1, Math.round(Math.log10(top / lo)))
  const ticks = Array.from({ length: decades + 1 }, (_, i) => lo * 10 ** i)
  return { scale: (v) => (v <= 0 ? 0 : (Math.log10(Math.max(v, lo) / lo) / decades) * PLOT_W), ticks }
}

/** Renders `chart` as a standalone SVG document. */
export function barChart(chart: BarChart): string {
  const log = chart.log === true
  const all = chart.values.flat().flatMap((s) => (s === undefined ? [] : [s.median, s.max]))
  const { scale, ticks } = axis(all, log)
  const groupH = chart.series.length * BAR + GAP
  const top = 48
  const height = top + chart.rows.length * groupH + 40
  const width = LABEL_W + PLOT_W + 90
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<title>${esc(chart.title)}</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="18" font-size="14" font-weight="bold">${esc(chart.title)}</text>`,
  ]
  chart.series.forEach((name, i) => {
    const x = LABEL_W + i * 120
    parts.push(`<rect x="${x}" y="28" width="10" height="10" fill="${PALETTE[i % PALETTE.length]}"/>`)
    parts.push(`<text x="${x + 14}" y="37">${esc(name)}</text>`)
  })
  for (const t of ticks) {
    const x = LABEL_W + scale(t)
    parts.push(`<line x1="${x}" y1="${top - 4}" x2="${x}" y2="${height - 34}" stroke="#ddd"/>`)
    parts.push(
      `<text x="${x}" y="${height - 22}" text-anchor="middle" fill="#555">${Number.isInteger(t) ? fmt(t) : fmtAuto(t)}</text>`,
    )
  }
  parts.push(
    `<text x="${LABEL_W + PLOT_W / 2}" y="${height - 6}" text-anchor="middle" fill="#333">${esc(chart.unit)}${log ? ' (log scale)' : ''}; bar = median, whisker = min–max over runs</text>`,
  )
  chart.rows.forEach((row, r) => {
    const y0 = top + r * groupH
    parts.push(`<text x="${LABEL_W - 8}" y="${y0 + groupH / 2}" text-anchor="end">${esc(row)}</text>`)
    chart.series.forEach((_, s) => {
      parts.push(...bar(chart.values[r]?.[s], y0 + s * BAR, s, scale))
    })
  })
  parts.push('</svg>')
  return `${parts.join('\n')}\n`
}

function bar(v: Spread | undefined, y: number, s: number, scale: (v: number) => number): string[] {
  if (v === undefined || !Number.isFinite(v.median)) return []
  const w = Math.max(1, scale(v.median))
  const out = [
    `<rect x="${LABEL_W}" y="${y}" width="${w.toFixed(1)}" height="${BAR - 2}" fill="${PALETTE[s % PALETTE.length]}"/>`,
  ]
  let end = w
  if (v.n > 1 && Number.isFinite(v.max)) {
    const [a, b] = [LABEL_W + scale(v.min), LABEL_W + scale(v.max)]
    out.push(`<line x1="${a.toFixed(1)}" y1="${y + 4}" x2="${b.toFixed(1)}" y2="${y + 4}" stroke="#222"/>`)
    end = Math.max(w, b - LABEL_W)
  }
  out.push(`<text x="${(LABEL_W + end + 4).toFixed(1)}" y="${y + 8}" fill="#333">${fmtAuto(v.median)}</text>`)
  return out
}
