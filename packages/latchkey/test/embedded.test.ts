import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll } from 'vitest'
import { memoryBackend } from '../src/backends/memory/index.js'
import { sqliteBackend } from '../src/backends/sqlite/index.js'
import { describeBackendConformance } from '../src/testing/index.js'

const support = (file: string) => fileURLToPath(new URL(`./support/${file}`, import.meta.url))

describeBackendConformance('memory', () => memoryBackend(), {
  processBackend: {
    module: fileURLToPath(new URL('../src/backends/memory/index.ts', import.meta.url)),
    export: 'memoryBackend',
  },
})

const dir = mkdtempSync(join(tmpdir(), 'latchkey-sqlite-'))
process.env.LATCHKEY_SQLITE_PATH = join(dir, 'locks.db')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describeBackendConformance('sqlite', () => sqliteBackend({ path: join(dir, 'locks.db') }), {
  processBackend: { module: support('sqlite-backend-module.ts') },
})
