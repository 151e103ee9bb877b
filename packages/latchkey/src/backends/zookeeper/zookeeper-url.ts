/**
 * `zookeeper://h1:2181,h2:2181[/chroot][?sessionTimeoutMs=&connectTimeoutMs=&root=&lockNodeIdleMs=&layout=curator]` and the
 * `host:port,...[/chroot]` connect string behind it, checked before node-zookeeper-client sees them: it hands
 * each port to `net.connect` inside a socket callback, so `127.0.0.1:abc` (or `u:pw@host`, read as host `u`,
 * port `pw@host`) throws where no caller can catch it and the process dies.
 */
import {
  checkQueryKeys,
  choiceOption,
  formatServer,
  type HostPort,
  numberOption,
  parseHostList,
  shownUrl,
  splitServerListUrl,
} from '../../backend/url-parts.js'
import type { ZookeeperBackendOptions } from './index.js'

/** A checked connect string. */
export interface ZkConnectString {
  readonly servers: readonly HostPort[]
  /** `''` or `/a/b`: the chroot every path of the session lives under. */
  readonly chroot: string
  /** `h1:2181,h2:2181`, without the chroot: what the client connects to, and messages name. */
  readonly hosts: string
}

/** A znode path: `/` then segments that are not empty, `.` or `..` (ZooKeeper's own rule). */
const ZNODE_PATH = /^(\/(?!\.\.?(\/|$))[^/\0]+)+$/

/**
 * Checks a `host:port,...[/chroot]` connect string (`url` is what messages show; the string itself by default).
 * Throws `RangeError` naming the bad part.
 */
export function parseConnectString(connectString: string, url = connectString): ZkConnectString {
  const slash = connectString.indexOf('/')
  const list = slash < 0 ? connectString : connectString.slice(0, slash)
  let chroot = slash < 0 ? '' : connectString.slice(slash)
  if (chroot === '/') chroot = ''
  if (list.includes('@')) {
    throw new RangeError(
      `latchkey: a ZooKeeper connect string cannot carry credentials (user:password@); pass options.client with addAuthInfo instead, received ${shownUrl(url)}`,
    )
  }
  const servers = parseHostList(list, 2181, url)
  if (chroot !== '' && !ZNODE_PATH.test(chroot)) {
    throw new RangeError(
      `latchkey: the ZooKeeper chroot ${JSON.stringify(chroot)} is not a znode path like /app/locks, in ${shownUrl(url)}`,
    )
  }
  return { servers, chroot, hosts: servers.map(formatServer).join(',') }
}

const KNOWN = ['sessionTimeoutMs', 'connectTimeoutMs', 'root', 'lockNodeIdleMs', 'layout'] as const

/** Parses and checks a `zookeeper://` URL into {@link ZookeeperBackendOptions}. */
export function parseZookeeperUrl(url: string): ZookeeperBackendOptions {
  const parts = splitServerListUrl(
    url,
    'zookeeper',
    'zookeeper://h1:2181,h2:2181/chroot',
    'pass zookeeperBackend({ client }) with addAuthInfo instead',
  )
  checkQueryKeys(parts.query, KNOWN, 'zookeeper', url)
  const { hosts, chroot } = parseConnectString(`${parts.hosts}${parts.path}`, url)
  const root = parts.query.get('root')
  const options: ZookeeperBackendOptions = { connectString: `${hosts}${chroot}` }
  const sessionTimeoutMs = numberOption(parts.query, 'sessionTimeoutMs', 1_000, url)
  const connectTimeoutMs = numberOption(parts.query, 'connectTimeoutMs', 1, url)
  const lockNodeIdleMs = numberOption(parts.query, 'lockNodeIdleMs', 0, url)
  const layout = choiceOption(parts.query, 'layout', ['latchkey', 'curator'] as const, url)
  return {
    ...options,
    ...(sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs }),
    ...(connectTimeoutMs === undefined ? {} : { connectTimeoutMs }),
    ...(lockNodeIdleMs === undefined ? {} : { lockNodeIdleMs }),
    ...(root === null ? {} : { root }),
    ...(layout === undefined ? {} : { layout }),
  }
}
