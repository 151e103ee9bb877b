import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'apps/*/test/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    coverage: {
      provider: 'v8',
      include: ['packages/latchkey/src/**/*.ts'],
      exclude: ['**/*.test.ts', 'packages/latchkey/src/testing/**'],
      reporter: ['text-summary', 'json-summary'],
    },
  },
})
