/**
 * Apache Curator's InterProcessMutex as a bench contender: bench/java/CuratorBench.java compiled against
 * Debian's jars (scripts/servers/java.sh installs them when missing) into `<repo>/.data/curator-bench/<hash>/`,
 * run as one long-lived JVM per ZooKeeper target that answers the same cells as the Node workers (modes.ts).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface, type Interface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { ContendedResult, UncontendedResult } from './modes.js'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const SOURCE = fileURLToPath(new URL('../java/CuratorBench.java', import.meta.url))
const JARS = [
  'curator-recipes',
  'curator-framework',
  'curator-client',
  'zookeeper',
  'zookeeper-jute',
  'guava',
  'slf4j-api',
  'slf4j-nop',
].map((jar) => `/usr/share/java/${jar}.jar`)

/** The classpath of the compiled bench program (compiled when its source changed). */
export function curatorBenchClasspath(): string {
  const missing = JARS.some((jar) => !existsSync(jar))
  if (missing) execFileSync('bash', [join(REPO, 'scripts/servers/java.sh'), 'start'], { stdio: 'inherit' })
  const hash = createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 12)
  const root = join(REPO, '.data', 'curator-bench')
  const dir = join(root, hash)
  if (!existsSync(join(dir, 'CuratorBench.class'))) {
    mkdirSync(root, { recursive: true })
    // Compiled aside, then renamed into place: two runs compiling at once never see half a class file.
    const tmp = mkdtempSync(join(root, 'build-'))
    execFileSync('javac', ['-nowarn', '-d', tmp, '-cp', JARS.join(':'), SOURCE], { stdio: 'inherit' })
    try {
      renameSync(tmp, dir)
    } catch {
      rmSync(tmp, { recursive: true, force: true })
    }
  }
  return [dir, ...JARS].join(':')
}

/** One warm JVM running Curator against one ZooKeeper target. */
export class CuratorBench {
  private readonly lines: AsyncIterator<string>

  private constructor(
    private readonly child: ChildProcess,
    reader: Interface,
  ) {
    this.lines = reader[Symbol.asyncIterator]()
  }

  /** Starts the JVM with `sessions` clients under `basePath` and waits for its warm-up. */
  static async start(connectString: string, basePath: string, sessions: number): Promise<CuratorBench> {
    const child = spawn(
      'java',
      ['-Xmx256m', '-cp', curatorBenchClasspath(), 'CuratorBench', connectString, basePath, String(sessions)],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    )
    const bench = new CuratorBench(child, createInterface({ input: child.stdout as NodeJS.ReadableStream }))
    const first = await bench.next()
    if (first !== 'ready') throw new Error(`CuratorBench did not start: ${first}`)
    return bench
  }

  private async next(): Promise<string> {
    const r = await this.lines.next()
    if (r.done === true) throw new Error('CuratorBench exited')
    return r.value
  }

  uncontended(concurrency: number, startAt: number, endAt: number): Promise<UncontendedResult> {
    return this.ask(`uncontended ${concurrency} ${startAt} ${endAt}`).then((r) => ({ ...r, clientCmds: 0 }))
  }

  contended(
    waiters: number,
    w: { startAt: number; measureFrom: number; endAt: number; holdMs: number; thinkMs: number },
  ): Promise<ContendedResult> {
    const line = `contended ${waiters} ${w.startAt} ${w.measureFrom} ${w.endAt} ${w.holdMs} ${w.thinkMs}`
    return this.ask(line).then((r) => ({ ...r, clientCmds: 0 }))
  }

  private async ask(line: string) {
    this.child.stdin?.write(`${line}\n`)
    return JSON.parse(await this.next())
  }

  /** Deletes its base path and exits. */
  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.stdin?.end('quit\n')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
  }
}
