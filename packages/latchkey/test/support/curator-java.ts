/**
 * Runs Apache Curator's own lock recipes in a JVM beside latchkey (test/support/curator/CuratorHolder.java),
 * compiled against Debian's jars (scripts/servers/java.sh installs them when missing) into
 * `<repo>/.data/curator-java/<source hash>/`, so a changed source recompiles and an unchanged one is reused.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const REPO = fileURLToPath(new URL('../../../../', import.meta.url))
const SOURCE = fileURLToPath(new URL('./curator/CuratorHolder.java', import.meta.url))
/** Curator 5.4 and what it needs at run time (Debian's jars also name their dependencies in their manifests). */
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

function hasJdk(): boolean {
  try {
    execFileSync('javac', ['-version'], { stdio: 'ignore' })
  } catch {
    return false
  }
  return JARS.every((jar) => existsSync(jar))
}

/**
 * The classpath of Java program `source` (class `className`) compiled against Curator into
 * `<repo>/.data/<folder>/<source hash>/`: installs the JDK and Curator when missing, compiles when changed.
 */
export function compileCuratorProgram(source: string, className: string, folder: string): string {
  if (!hasJdk()) execFileSync('bash', [join(REPO, 'scripts/servers/java.sh'), 'start'], { stdio: 'inherit' })
  const hash = createHash('sha256').update(readFileSync(source)).digest('hex').slice(0, 12)
  const root = join(REPO, '.data', folder)
  const dir = join(root, hash)
  if (!existsSync(join(dir, `${className}.class`))) {
    mkdirSync(root, { recursive: true })
    // Compiled aside, then renamed into place: two runs compiling at once never see half a class file.
    const tmp = mkdtempSync(join(root, 'build-'))
    execFileSync('javac', ['-nowarn', '-d', tmp, '-cp', JARS.join(':'), source], { stdio: 'inherit' })
    try {
      renameSync(tmp, dir)
    } catch {
      rmSync(tmp, { recursive: true, force: true }) // another run got there first
    }
  }
  return [dir, ...JARS].join(':')
}

/** The classpath of the compiled holder. */
export const curatorClasspath = (): string => compileCuratorProgram(SOURCE, 'CuratorHolder', 'curator-java')

/** What a holder reports when done: violations seen (a changed counter under a read lock), most files at once. */
export interface CuratorOutcome {
  readonly violations: number
  readonly max: number
}

/** A running Curator holder: `ready` once connected, `go()` starts its loop, `done` when it has finished. */
export interface CuratorHolder {
  readonly ready: Promise<void>
  go(): void
  readonly done: Promise<CuratorOutcome>
  readonly child: ChildProcess
}

/**
 * Starts `CuratorHolder <connect> <kind> <path> <iterations> <dataPath> [permits]` (see the Java source).
 * stderr is kept for the failure message.
 */
export function startCuratorHolder(classpath: string, args: readonly (string | number)[]): CuratorHolder {
  const child = spawn(
    'java',
    ['-Xmx64m', '-XX:TieredStopAtLevel=1', '-cp', classpath, 'CuratorHolder', ...args.map(String)],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  )
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
  let onReady: () => void = () => undefined
  const ready = new Promise<void>((resolve) => {
    onReady = resolve
  })
  let outcome: CuratorOutcome | undefined
  lines.on('line', (line) => {
    if (line === 'ready') onReady()
    const m = /^done (\d+) (\d+)$/.exec(line)
    if (m !== null) outcome = { violations: Number(m[1]), max: Number(m[2]) }
  })
  const done = new Promise<CuratorOutcome>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => {
      if (code === 0 && outcome !== undefined) resolve(outcome)
      else reject(new Error(`CuratorHolder ${args.join(' ')} exited with ${code}: ${stderr.slice(-2_000)}`))
    })
  })
  // A holder that dies before it is ready fails `ready` too, instead of leaving the test waiting.
  const readyOrDied = Promise.race([ready, done.then(() => undefined)])
  readyOrDied.catch(() => undefined)
  done.catch(() => undefined)
  return { ready: readyOrDied, go: () => child.stdin?.end('go\n'), done, child }
}
