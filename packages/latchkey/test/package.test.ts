/**
 * The published package as a user gets it: `npm pack`, install the tarball into a fresh folder, and load it
 * from CommonJS, from an ES module and from TypeScript. No server needed (the memory backend).
 */

import { execFileSync } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  assertDistIsFresh,
  installTarball,
  type Packed,
  pack,
  packageDir,
  repoRoot,
  run,
} from './support/packed-package.js'

const consumerScripts = join(packageDir, 'test', 'package-consumer')
const subpaths = [
  '',
  '/memory',
  '/sqlite',
  '/redis',
  '/zookeeper',
  '/mysql',
  '/postgres',
  '/etcd',
  '/fence',
  '/testing',
  '/prometheus',
  '/opentelemetry',
]

let tmp: string
let consumer: string
let installed: string
let packed: Packed

beforeAll(async () => {
  assertDistIsFresh()
  tmp = mkdtempSync(join(tmpdir(), 'latchkey-package-'))
  consumer = join(tmp, 'consumer')
  mkdirSync(consumer)
  packed = await pack(tmp)
  installed = await installTarball(packed.tarball, consumer)
  for (const script of ['require-every-subpath.cjs', 'import-and-require.mjs']) {
    copyFileSync(join(consumerScripts, script), join(consumer, script))
  }
})

afterAll(() => {
  if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true })
})

/** Runs a consumer script with node in the consumer folder; returns the JSON it printed and its stderr. */
async function runConsumer(script: string): Promise<{ result: unknown; stderr: string }> {
  // Node 22.12 (alone: 20.19+ and 22.13+ are silent) warns on the first require() of an ES module; any other
  // output on stderr is a finding.
  const { stdout, stderr } = await run(process.execPath, ['--disable-warning=ExperimentalWarning', script], consumer)
  return { result: JSON.parse(stdout), stderr }
}

/** Type-checks `lines` as a CommonJS TypeScript file (module nodenext) of the consumer folder; throws on errors. */
async function typecheck(file: string, lines: string[]): Promise<void> {
  writeFileSync(join(consumer, file), `${lines.join('\n')}\n`)
  const compilerOptions = {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    types: ['node'],
    typeRoots: [join(repoRoot, 'node_modules', '@types')],
  }
  const config = join(consumer, `tsconfig.${file}.json`)
  writeFileSync(config, JSON.stringify({ compilerOptions, files: [file] }))
  const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc')
  await run(process.execPath, [tsc, '-p', config], consumer)
}

describe('npm pack', () => {
  it('ships package.json, README, LICENSE, CHANGELOG, the bin and dist, and no test or build-info file', () => {
    const paths = packed.files.map((f) => f.path)
    expect(paths).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md']))
    expect(paths.filter((p) => !p.startsWith('dist/')).sort()).toEqual([
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'bin/latchkey.js',
      'package.json',
    ])
    expect(paths.filter((p) => /\.test\.|(^|\/)test\/|\.tsbuildinfo$/.test(p))).toEqual([])
  })

  it('installs a working latchkey bin', () => {
    const help = execFileSync(process.execPath, [join(installed, 'bin', 'latchkey.js'), '--help'], { encoding: 'utf8' })
    expect(help).toContain('latchkey inspect URL NAME')
  })

  it('ships no source map, or map reference, that points at a file the tarball lacks', () => {
    const paths = new Set(packed.files.map((f) => f.path))
    const dangling: string[] = []
    for (const path of paths) {
      const text = readFileSync(join(installed, path), 'utf8')
      if (path.endsWith('.map')) {
        const map = JSON.parse(text) as { sources: string[]; sourceRoot?: string }
        for (const source of map.sources) {
          const target = posix.join(posix.dirname(path), map.sourceRoot ?? '', source)
          if (!paths.has(target)) dangling.push(`${path} -> ${target}`)
        }
      } else if (/\.[cm]?js$|\.d\.[cm]?ts$/.test(path)) {
        const ref = /^\/\/# sourceMappingURL=(\S+)\s*$/m.exec(text)?.[1]
        const target = ref === undefined ? undefined : posix.join(posix.dirname(path), ref)
        if (target !== undefined && !paths.has(target)) dangling.push(`${path} -> ${target}`)
      }
    }
    expect(dangling).toEqual([])
  })

  it("ships the repository root's README and LICENSE, unchanged", () => {
    for (const file of ['README.md', 'LICENSE']) {
      expect(readFileSync(join(installed, file), 'utf8'), file).toBe(readFileSync(join(repoRoot, file), 'utf8'))
    }
    expect(existsSync(join(packageDir, 'README.md')), 'the generated package README is removed after packing').toBe(
      false,
    )
  })

  it('maps every subpath to types first and a default condition, both present in the tarball', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      exports: Record<string, string | Record<string, string>>
    }
    const paths = new Set(packed.files.map((f) => f.path))
    for (const subpath of subpaths) {
      const entry = manifest.exports[`.${subpath}`]
      expect(typeof entry === 'object' && Object.keys(entry), `exports["."${subpath}]`).toEqual(['types', 'default'])
      for (const target of Object.values(entry as Record<string, string>)) {
        expect(paths.has(posix.normalize(target)), `${subpath || '.'}: ${target}`).toBe(true)
      }
    }
  })
})

describe('the installed tarball', () => {
  it('CommonJS: require() loads every subpath without its optional peers and takes a lock', async () => {
    const { result, stderr } = await runConsumer('require-every-subpath.cjs')
    expect(result).toEqual({
      loaded: {
        latchkey: 'function',
        'latchkey/memory': 'function',
        'latchkey/sqlite': 'function',
        'latchkey/redis': 'function',
        'latchkey/zookeeper': 'function',
        'latchkey/mysql': 'function',
        'latchkey/postgres': 'function',
        'latchkey/etcd': 'function',
        'latchkey/fence': 'function',
        // the conformance suite is written with vitest, an optional peer this folder lacks
        'latchkey/testing': 'ERR_MODULE_NOT_FOUND: vitest',
        // metrics and tracing need prom-client and @opentelemetry/api, optional peers too
        'latchkey/prometheus': 'ERR_MODULE_NOT_FOUND: prom-client',
        'latchkey/opentelemetry': 'ERR_MODULE_NOT_FOUND: @opentelemetry/api',
      },
      token: 'bigint',
      timedOut: true,
      freeAfterRelease: true,
      acquisitionsCounted: null,
    })
    expect(stderr).toBe('')
  })

  it('CommonJS: require("latchkey/testing") works once vitest is installed', async () => {
    // what `npm install vitest` would give: the workspace's copy, its own dependencies found from its real path
    const link = join(consumer, 'node_modules', 'vitest')
    symlinkSync(join(repoRoot, 'node_modules', 'vitest'), link, 'dir')
    try {
      const { result } = await runConsumer('require-every-subpath.cjs')
      expect((result as { loaded: Record<string, string> }).loaded['latchkey/testing']).toBe('function')
    } finally {
      rmSync(link)
    }
  })

  it('CommonJS: latchkey/prometheus and latchkey/opentelemetry work once prom-client and @opentelemetry/api are installed', async () => {
    // what `npm install prom-client @opentelemetry/api` would give: the workspace's copies, linked
    const links = [join(consumer, 'node_modules', 'prom-client'), join(consumer, 'node_modules', '@opentelemetry')]
    symlinkSync(join(repoRoot, 'node_modules', 'prom-client'), links[0] as string, 'dir')
    mkdirSync(links[1] as string)
    symlinkSync(join(repoRoot, 'node_modules', '@opentelemetry', 'api'), join(links[1] as string, 'api'), 'dir')
    try {
      const { result, stderr } = await runConsumer('require-every-subpath.cjs')
      const { loaded, acquisitionsCounted } = result as { loaded: Record<string, string>; acquisitionsCounted: number }
      expect(loaded['latchkey/prometheus']).toBe('function')
      expect(loaded['latchkey/opentelemetry']).toBe('function')
      // two acquisitions: the lease, then the tryAcquire after its release (the timed-out one is not counted)
      expect(acquisitionsCounted).toBe(2)
      expect(stderr).toBe('')
      await typecheck('peers.cts', [
        "import { combineEventHandlers, createLocks } from 'latchkey'",
        "import { memoryBackend } from 'latchkey/memory'",
        "import { openTelemetryInstrumentation } from 'latchkey/opentelemetry'",
        "import { prometheusMetrics } from 'latchkey/prometheus'",
        "import { Registry } from 'prom-client'",
        "const metrics = prometheusMetrics({ registry: new Registry(), prefix: 'app_', nameLabel: false })",
        'const otel = openTelemetryInstrumentation({ spans: false })',
        'const onEvent = combineEventHandlers(metrics.onEvent, otel.onEvent)',
        'const locks = createLocks({ backend: memoryBackend(), onEvent })',
        'const text: Promise<string> = metrics.registry.metrics()',
        // a wrong type must be caught, or the imports resolved to `any`
        '// @ts-expect-error buckets are numbers',
        "prometheusMetrics({ buckets: ['1'] })",
        'export { locks, text }',
      ])
    } finally {
      for (const link of links) rmSync(link, { recursive: true, force: true })
    }
  })

  it('ESM: import and require share one module instance, so errors pass isLockError and instanceof both ways', async () => {
    const { result, stderr } = await runConsumer('import-and-require.mjs')
    expect(result).toEqual({
      sameModule: true,
      esmErrorSeenByRequire: true,
      requireErrorSeenByImport: true,
      freeAfterRelease: true,
    })
    expect(stderr).toBe('')
  })

  it('TypeScript: a CommonJS file (module nodenext) gets the types of every subpath it imports', async () => {
    const lines = [
      "import { createLocks, isLockError, type Lease } from 'latchkey'",
      "import { memoryBackend } from 'latchkey/memory'",
      "import { createFenceGuard } from 'latchkey/fence'",
      "import type { RedisBackendOptions } from 'latchkey/redis'",
      'const locks = createLocks({ backend: memoryBackend() })',
      "const lease: Promise<Lease> = locks.mutex('a').acquire({ waitMs: 10 })",
      'const token: Promise<bigint> = lease.then((l) => l.token)',
      "const guard: Promise<void> = createFenceGuard().admit('a', 1n)",
      'const checked: boolean = isLockError(new Error())',
      "const layout: RedisBackendOptions['layout'] = 'redisson'",
      // a wrong type must be caught, or the imports resolved to `any`
      '// @ts-expect-error a lock name is a string',
      'locks.mutex(42)',
      'export { token, guard, checked, layout }',
    ]
    await typecheck('consumer.cts', lines)
  })
})
