import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { sleep } from '../lib/clock.js'

const run = promisify(execFile)
const LAZY_FS = join(import.meta.dirname, '..', 'lazyfs', 'lazy_fs.py')

/** A mounted lazy_fs.py (T13): a directory whose un-fsynced writes a power cut loses. */
export interface LazyMount {
  dir: string
  /** The directory the mount mirrors: what is written there directly (a database's initial files) is on disk. */
  backing: string
  /** Drops every byte written and not fsynced since the last fsync of its file (the server must be dead). */
  powerLoss(): void
  /** Writes every unsynced byte to disk, as the kernel's periodic writeback does with dirty pages 30 s old. */
  writeback(): void
  unmount(): Promise<void>
}

/**
 * Mounts a fresh lazy filesystem at `<root>/mnt` over `<root>/backing`. `pageCache`: without direct_io, for a
 * server that mmaps its files (lazy_fs.py says why a restarted server still reads only what survived).
 */
export async function mountLazyFs(root: string, options: { pageCache?: boolean } = {}): Promise<LazyMount> {
  const backing = join(root, 'backing')
  const dir = join(root, 'mnt')
  await run('fusermount3', ['-u', '-q', dir]).catch(() => {})
  rmSync(root, { recursive: true, force: true })
  mkdirSync(backing, { recursive: true })
  mkdirSync(dir, { recursive: true })
  // Its log says how many unsynced bytes each power cut dropped (the evidence that a cut lost something).
  const log = openSync(join(root, 'lazy_fs.log'), 'a')
  const child: ChildProcess = spawn(
    '/usr/bin/python3',
    [LAZY_FS, backing, dir, ...(options.pageCache === true ? ['--page-cache'] : [])],
    { stdio: ['ignore', log, log] },
  )
  closeSync(log)
  for (let i = 0; !readFileSync('/proc/mounts', 'utf8').includes(` ${dir} fuse`); i++) {
    if (i > 100 || child.exitCode !== null) throw new Error(`lab: lazy_fs.py did not mount ${dir} (python3-fusepy?)`)
    await sleep(100)
  }
  return {
    dir,
    backing,
    powerLoss: () => {
      try {
        statSync(join(dir, '.power-loss'))
      } catch {
        // the stat fails by design: the filesystem answers it by dropping the unsynced data
      }
    },
    writeback: () => {
      try {
        statSync(join(dir, '.writeback'))
      } catch {
        // fails by design, as .power-loss
      }
    },
    unmount: async () => {
      await run('fusermount3', ['-u', dir]).catch(() => {})
      child.kill('SIGKILL')
    },
  }
}
