#!/usr/bin/env node
// The built CLI (npm run build -w latchkey-tx); from the sources: node --import tsx packages/tx/src/cli/run.ts
import '../dist/cli/run.js'
