import { connect } from 'node:net'
import { zkUrl } from '../../packages/latchkey/test/support/zookeeper-env.ts'

/** The text of ZooKeeper's `mntr` four-letter word from the server at `hostPort`. */
async function mntrText(hostPort: string): Promise<string> {
  const [host, port] = hostPort.split(':')
  return new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), host, () => socket.write('mntr'))
    let data = ''
    socket.on('data', (chunk) => {
      data += chunk
    })
    socket.on('close', () => resolve(data))
    socket.on('error', reject)
  })
}

/** One counter of a `mntr` text (NaN when absent). */
const stat = (text: string, name: string) => Number(new RegExp(`^${name}\\s+(\\d+)`, 'm').exec(text)?.[1])

/** ZooKeeper's `mntr` four-letter word: znode count and approximate data size (paths + data, in bytes). */
export async function mntr(): Promise<{ znodes: number; bytes: number }> {
  const text = await mntrText(zkUrl().split(',')[0] ?? '')
  return { znodes: stat(text, 'zk_znode_count'), bytes: stat(text, 'zk_approximate_data_size') }
}

/** Requests one ZooKeeper server has served so far (its `mntr` latency counters: every write, every read). */
export interface ZkRequestCounters {
  readonly writes: number
  readonly reads: number
}

/**
 * The request counters of the server at `hostPort`. Counted by the server, they treat every client alike (Curator's
 * Java client and latchkey's): on a server only the bench uses, a window's delta is what the contender sent. Reads
 * include the clients' pings (one per session every third of its timeout, a few per second).
 */
export async function zkRequestCounters(hostPort: string): Promise<ZkRequestCounters & { state: string }> {
  const text = await mntrText(hostPort)
  const state = /^zk_server_state\s+(\S+)/m.exec(text)?.[1] ?? 'unknown'
  return { writes: stat(text, 'zk_cnt_updatelatency'), reads: stat(text, 'zk_cnt_readlatency'), state }
}

/** Whether every server of `connect` (host:port, comma-separated) answers `mntr`; the benches skip a target that does not. */
export async function zkServing(connect: string): Promise<boolean> {
  try {
    await Promise.all(connect.split(',').map((hostPort) => mntrText(hostPort)))
    return true
  } catch {
    return false
  }
}

/**
 * The request counters of the server at `hostPort` and its client packets: each request (pings included) gets one
 * reply, so packets sent minus packets received over a window are the watch events it sent meanwhile.
 */
export async function zkPacketCounters(
  hostPort: string,
): Promise<ZkRequestCounters & { readonly sent: number; readonly received: number }> {
  const text = await mntrText(hostPort)
  return {
    writes: stat(text, 'zk_cnt_updatelatency'),
    reads: stat(text, 'zk_cnt_readlatency'),
    sent: stat(text, 'zk_packets_sent'),
    received: stat(text, 'zk_packets_received'),
  }
}
