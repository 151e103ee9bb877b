/**
 * `redis://[user:password@]host[:port][/db][?layout=&commandTimeoutMs=&subscriberLingerMs=]` (`rediss://` for
 * TLS), checked before any client exists: ioredis alone reads `redis:/host:6379` as host `redis` and ignores
 * query keys it does not know.
 */
import {
  checkQueryKeys,
  choiceOption,
  formatServer,
  type HostPort,
  numberOption,
  parseSingleHostUrl,
  shownUrl,
} from '../../backend/url-parts.js'
import type { RedisLayoutName } from './key-layout.js'

/** The parts of a `redis://` URL. */
export interface RedisUrl {
  readonly server: HostPort
  readonly tls: boolean
  readonly username: string | undefined
  readonly password: string | undefined
  readonly db: number
  readonly layout: RedisLayoutName | undefined
  readonly commandTimeoutMs: number | undefined
  readonly subscriberLingerMs: number | undefined
  /** `scheme://userinfo@host:port/db` without latchkey's query options, for clients that take a URL. */
  readonly clientUrl: string
  /** `host:port`, for messages. */
  readonly label: string
}

const KNOWN = ['layout', 'commandTimeoutMs', 'subscriberLingerMs'] as const

/** Parses and checks a `redis://` / `rediss://` URL; `RangeError` naming the bad part. */
export function parseRedisUrl(url: string): RedisUrl {
  const { parts, server, username, password } = parseSingleHostUrl(url, 6379, 'redis://host:6379/0')
  if (parts.scheme !== 'redis' && parts.scheme !== 'rediss') {
    throw new RangeError(`latchkey: a Redis URL starts with redis:// or rediss://, received ${shownUrl(url)}`)
  }
  const db = /^\/?$/.test(parts.path) ? '0' : /^\/(\d{1,9})\/?$/.exec(parts.path)?.[1]
  if (db === undefined) {
    throw new RangeError(
      `latchkey: the path of a Redis URL is a database number (redis://host:6379/0), received ${JSON.stringify(parts.path)} in ${shownUrl(url)}`,
    )
  }
  checkQueryKeys(parts.query, KNOWN, parts.scheme, url)
  const authority = parts.userinfo === undefined ? parts.hosts : `${parts.userinfo}@${parts.hosts}`
  return {
    server,
    tls: parts.scheme === 'rediss',
    username: username === '' ? undefined : username,
    password,
    db: Number(db),
    layout: choiceOption(parts.query, 'layout', ['latchkey', 'redisson'] as const, url),
    commandTimeoutMs: numberOption(parts.query, 'commandTimeoutMs', 0, url),
    subscriberLingerMs: numberOption(parts.query, 'subscriberLingerMs', 0, url),
    clientUrl: `${parts.scheme}://${authority}/${db}`,
    label: formatServer(server),
  }
}
