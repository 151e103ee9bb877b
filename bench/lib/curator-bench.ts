/**
 * Apache Curator's InterProcessMutex as a bench contender: bench/java/CuratorBench.java compiled against
 * Debian's jars (the curator-interop test's compiler, which installs them when missing) into
 * `<repo>/.data/curator-bench/<hash>/`,
 * run as one long-lived JVM per ZooKeeper target that answers the same cells as the Node workers (modes.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface, type Interface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { compileCuratorProgram } from '../../packages/latchkey/test/support/curator-java.js'
import type { ContendedResult, UncontendedResult } from './modes.js'

const SOURCE = fileURLToPath(new URL('../java/CuratorBench.java', import.meta.url))

/** The classpath of the compiled bench program (compiled when its source changed). */
export const curatorBenchClasspath = (): string => compileCuratorProgram(SOURCE, 'CuratorBench', 'curator-bench')

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
  static async start(
    connectString: string,
    basePath: string,
    sessions: number,
    startMs = 45_000,
  ): Promise<CuratorBench> {
    const child = spawn(
      'java',
      ['-Xmx256m', '-cp', curatorBenchClasspath(), 'CuratorBench', connectString, basePath, String(sessions)],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    )
    const bench = new CuratorBench(child, createInterface({ input: child.stdout as NodeJS.ReadableStream }))
    // A ZooKeeper that does not answer leaves Curator waiting for its first session forever: killed after
    // `startMs` (the JVM's start, the compile-free warm-up and the sessions take a few seconds when it does).
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => {
        child.kill('SIGKILL')
        resolve(`no ZooKeeper session at ${connectString} within ${startMs / 1000} s`)
      }, startMs)
    })
    const first = await Promise.race([bench.next().catch((e: unknown) => String(e)), late])
    clearTimeout(timer)
    if (first !== 'ready') {
      child.kill('SIGKILL')
      throw new Error(`CuratorBench did not start: ${first}`)
    }
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
