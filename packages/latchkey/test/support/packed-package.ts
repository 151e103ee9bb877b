/**
 * Packs `packages/latchkey` as `npm publish` would (from the built `dist`) and installs the tarball into a
 * fresh folder, the way a user of the published package gets it.
 */
import { execFile } from 'node:child_process'
import { readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)

/** The package's folder and the repository root. */
export const packageDir = fileURLToPath(new URL('../..', import.meta.url))
export const repoRoot = join(packageDir, '..', '..')

/** One file of `npm pack --json`'s list. */
export interface PackedFile {
  path: string
  size: number
}

/** What `npm pack` produced. */
export interface Packed {
  tarball: string
  files: PackedFile[]
}

// Variables npm sets for the script running vitest (npm_config_workspace, npm_package_*, ...) would
// steer the child npm: drop them so it acts as in a plain shell.
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')))
}

/** Runs a command to completion; rejects with its output when it exits non-zero. */
export async function run(command: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await execFileAsync(command, args, { cwd, env: cleanEnv(), maxBuffer: 16 * 1024 * 1024 })
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string }
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`)
  }
}

function newestMtime(dir: string, keep: (file: string) => boolean, pick: (a: number, b: number) => number): number {
  let found = Number.NaN
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const file = join(entry.parentPath, entry.name)
    if (!entry.isFile() || !keep(file)) continue
    const t = statSync(file).mtimeMs
    found = Number.isNaN(found) ? t : pick(found, t)
  }
  return found
}

/**
 * Throws unless `dist` was built after the last change to the sources and the build config: the tarball
 * is packed from `dist` as it is, and rebuilding it here would pull it from under tests running alongside.
 */
export function assertDistIsFresh(): void {
  const src = join(packageDir, 'src')
  const sources = Math.max(
    newestMtime(src, (f) => (f.endsWith('.ts') && !f.endsWith('.test.ts')) || f.endsWith('.lua'), Math.max),
    statSync(join(packageDir, 'tsconfig.build.json')).mtimeMs,
    statSync(join(repoRoot, 'tsconfig.base.json')).mtimeMs,
  )
  let oldestBuilt = Number.NaN
  try {
    oldestBuilt = newestMtime(join(packageDir, 'dist'), () => true, Math.min)
  } catch {
    // no dist at all: reported below
  }
  if (!(oldestBuilt >= sources)) {
    throw new Error(`${join(packageDir, 'dist')} is missing or older than src/ or the build config: run npm run build`)
  }
}

/** `npm pack` of the package into `dest` (its prepack script copies the root README in). */
export async function pack(dest: string): Promise<Packed> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dest], packageDir)
  // Lifecycle scripts may print before the JSON array: parse from its first line.
  const json = stdout.slice(stdout.search(/^\[/m))
  const [result] = JSON.parse(json) as [{ filename: string; files: PackedFile[] }]
  return { tarball: join(dest, result.filename), files: result.files }
}

/** Installs `tarball` into a new project in `dir` without touching the network; returns the installed package. */
export async function installTarball(tarball: string, dir: string): Promise<string> {
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'latchkey-consumer', private: true })}\n`)
  await run(
    'npm',
    ['install', tarball, '--offline', '--no-audit', '--no-fund', '--no-package-lock', '--ignore-scripts'],
    dir,
  )
  return join(dir, 'node_modules', 'latchkey')
}
