/**
 * The loss-detection-lag CDF: for each backend, the fraction of lost leases whose holder was told (its
 * `lease.signal` aborted) within x ms of a successor being granted the lock. Left of zero: the holder knew before
 * anyone else had the lock; right of zero: it believed it held the lock that long while someone else did.
 */
export function lagCdfSvg(lagsByBackend: Map<string, number[]>): string {
  const WIDTH = 760
  const HEIGHT = 360
  const LEFT = 60
  const BOTTOM = 40
  const all = [...lagsByBackend.values()].flat()
  if (all.length === 0) return ''
  const min = Math.min(0, ...all)
  const max = Math.max(1, ...all)
  const x = (ms: number): number => LEFT + ((ms - min) / (max - min)) * (WIDTH - LEFT - 150)
  const y = (fraction: number): number => HEIGHT - BOTTOM - fraction * (HEIGHT - BOTTOM - 20)
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22']
  const lines: string[] = []
  let i = 0
  for (const [backend, lags] of [...lagsByBackend].sort(([a], [b]) => a.localeCompare(b))) {
    if (lags.length === 0) continue
    const sorted = [...lags].sort((a, b) => a - b)
    const color = colors[i % colors.length]!
    const points = sorted.map((lag, k) => `${x(lag).toFixed(1)},${y((k + 1) / sorted.length).toFixed(1)}`)
    lines.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${x(sorted[0]!).toFixed(1)},${y(0)} ${points.join(' ')}"/>`,
      `<text x="${WIDTH - 140}" y="${30 + i * 16}" font-size="12" fill="${color}">${backend} (n=${sorted.length})</text>`,
    )
    i += 1
  }
  const ticks = [min, 0, Math.round(max / 2), max].filter((v, k, list) => list.indexOf(v) === k)
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" font-family="sans-serif">`,
    '<title>Loss-detection lag CDF</title>',
    `<text x="${LEFT}" y="14" font-size="12">Lost leases: lag from a successor's grant to the holder's lease.signal abort (ms), CDF per backend</text>`,
    `<line x1="${LEFT}" y1="${y(0)}" x2="${WIDTH - 150}" y2="${y(0)}" stroke="#000"/>`,
    `<line x1="${LEFT}" y1="${y(0)}" x2="${LEFT}" y2="${y(1)}" stroke="#000"/>`,
    `<line x1="${x(0)}" y1="${y(0)}" x2="${x(0)}" y2="${y(1)}" stroke="#999" stroke-dasharray="4"/>`,
    ...ticks.map((v) => `<text x="${x(v)}" y="${y(0) + 16}" font-size="11" text-anchor="middle">${v}</text>`),
    ...[0, 0.5, 1].map((f) => `<text x="${LEFT - 6}" y="${y(f) + 4}" font-size="11" text-anchor="end">${f}</text>`),
    ...lines,
    '</svg>',
    '',
  ].join('\n')
}
