/**
 * What the garbage collector costs an uncontended lock loop on any backend URL: `concurrency` loops of acquire →
 * release, each on its own key, in one process. Prints pairs/s and client CPU per pair over the measured loop, and
 * the collections in it (V8's --trace-gc-nvp, read from the child running the loop): young collections (scavenges)
 * and full ones (mark-compact), their pause per 1,000 pairs, and the bytes promoted to the old generation per young
 * collection. A structure that keeps garbage alive across young collections (a Map or Set that gains and loses an
 * entry per call: backend/churn-map.ts) shows as promoted bytes and full collections far above the memory backend's
 * and the Redis backend's (none).
 *
 *   npx tsx bench/uncontended-gc.ts <url> [pairs=20000] [concurrency=50]
 *   e.g. zookeeper://127.0.0.1:2181, etcd://127.0.0.1:2379, redis://127.0.0.1:6379
 *
 * LIB=<absolute path of another build's dist> runs that build instead (a change against the code before it).
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const LIB = process.env.LIB || fileURLToPath(new URL('../packages/latchkey/dist', import.meta.url))
const START = 'uncontended-gc: measuring'
const END = 'uncontended-gc: done'

async function child(url: string, pairs: number, concurrency: number): Promise<void> {
  const { backendFromUrl, createLocks } = (await import(`${LIB}/index.js`)) as typeof import('latchkey')
  const backend = await backendFromUrl(url)
  const locks = createLocks({ backend, namespace: `gc-${process.pid}`, ttlMs: 10_000 })
  const loops = async (n: number): Promise<void> => {
    let left = n
    await Promise.all(
      Array.from({ length: concurrency }, async (_, i) => {
        while (left-- > 0) await (await locks.mutex(`k${i}`).acquire()).release()
      }),
    )
  }
  await loops(Math.min(5_000, pairs)) // warm-up: the code compiled, the connections and lock nodes made
  console.log(START)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await loops(pairs)
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  console.log(END)
  console.log(JSON.stringify({ perSecond: (pairs / ms) * 1_000, cpuUs: (cpu.user + cpu.system) / pairs }))
  await locks.close()
  await backend.close()
  process.exit(0)
}

/** The `name=value` fields of one --trace-gc-nvp line. */
function fields(line: string): Map<string, string> {
  return new Map(line.split(/\s+/).map((f) => f.split('=', 2) as [string, string]))
}

async function parent(url: string, pairs: number, concurrency: number): Promise<void> {
  const me = fileURLToPath(import.meta.url)
  const args = ['--import', 'tsx', '--trace-gc-nvp', me, 'child', url, String(pairs), String(concurrency)]
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk
  })
  const code = await new Promise<number | null>((resolve) => proc.on('close', resolve))
  if (code !== 0) throw new Error(`the loop's process ended with ${code}:\n${out.slice(-2_000)}`)
  const lines = out.split('\n')
  const measured = lines.slice(lines.indexOf(START) + 1, lines.indexOf(END))
  const young = measured.filter((l) => l.includes('gc=s ')).map(fields)
  const full = measured.filter((l) => l.includes('gc=mc ')).map(fields)
  const pause = (gcs: Map<string, string>[]) => gcs.reduce((sum, f) => sum + Number(f.get('pause') ?? 0), 0)
  const promoted = young.reduce((sum, f) => sum + Number(f.get('promoted') ?? 0), 0)
  const { perSecond, cpuUs } = JSON.parse(lines[lines.indexOf(END) + 1] as string) as Record<string, number>
  const per1k = (ms: number) => ((ms / pairs) * 1_000).toFixed(1)
  console.log(
    `${url}, ${concurrency} loops, ${pairs} pairs: ${perSecond?.toFixed(0)} pairs/s, client CPU ${cpuUs?.toFixed(1)} µs/pair; ` +
      `${young.length} young collections (${per1k(pause(young))} ms per 1k pairs, ` +
      `${young.length === 0 ? 0 : (promoted / young.length / 1_024).toFixed(0)} KiB promoted each), ` +
      `${full.length} full (${per1k(pause(full))} ms per 1k pairs)`,
  )
}

const [first, ...rest] = process.argv.slice(2)
if (first === 'child') {
  const [url, pairs, concurrency] = rest
  await child(url as string, Number(pairs), Number(concurrency))
} else {
  if (first === undefined) throw new Error('usage: npx tsx bench/uncontended-gc.ts <url> [pairs] [concurrency]')
  await parent(first, Number(rest[0] ?? 20_000), Number(rest[1] ?? 50))
}
