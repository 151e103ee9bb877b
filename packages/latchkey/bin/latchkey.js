#!/usr/bin/env node
// The built CLI (npm run build -w latchkey); from the sources: node --import tsx packages/latchkey/src/cli/run.ts
import '../dist/cli/run.js'
