// The API reference: typedoc over every public entry point (each subpath in a package's "exports"), one site per
// package under docs/api/<package>. Run with `npm run docs`; the output is generated, not committed.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..')
for (const dir of ['packages/latchkey', 'packages/tx']) {
  const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'))
  // "./dist/backends/redis/index.js" is built from "./src/backends/redis/index.ts".
  const entryPoints = Object.values(pkg.exports)
    .map((target) => (typeof target === 'string' ? target : (target.default ?? target.import)))
    .filter((file) => typeof file === 'string' && file.endsWith('.js'))
    .map((file) => join(dir, file.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts')))
  const out = join('docs', 'api', pkg.name)
  execFileSync(
    'npx',
    [
      'typedoc',
      '--tsconfig',
      join(dir, 'tsconfig.json'),
      '--name',
      pkg.name,
      '--readme',
      existsSync(join(root, dir, 'README.md')) ? join(dir, 'README.md') : 'README.md',
      '--out',
      out,
      '--excludePrivate',
      '--excludeInternal',
      '--logLevel',
      'Error',
      ...entryPoints.flatMap((e) => ['--entryPoints', e]),
    ],
    { cwd: root, stdio: 'inherit' },
  )
  console.log(`api-docs: ${pkg.name} (${entryPoints.length} entry points) in ${out}/index.html`)
}
