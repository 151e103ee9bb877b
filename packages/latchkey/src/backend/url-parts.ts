/**
 * The checks every backend URL goes through before a client library sees it. Client libraries take bad parts
 * in ways no caller can catch or notice: node-zookeeper-client throws `ERR_SOCKET_BAD_PORT` from a socket
 * callback (the process dies), mysql2 turns port 0 into 3306, ioredis reads `redis:/host` as host `redis`. So
 * each scheme's parser (beside its backend) splits the URL here, checks every part, and throws a `TypeError` /
 * `RangeError` naming the part and the URL with its credentials hidden.
 */
import { redactUrl } from '../redact-url.js'

/** One server of a URL. */
export interface HostPort {
  readonly host: string
  readonly port: number
}

/** The raw parts of `scheme://userinfo@hosts/path?query#fragment`. */
export interface UrlParts {
  readonly scheme: string
  /** Whether `//` followed the scheme. */
  readonly slashes: boolean
  /** Text before the last `@` of the authority, undefined without one. */
  readonly userinfo: string | undefined
  /** The authority without userinfo: `h1:p1,h2:p2`. */
  readonly hosts: string
  /** `''` or `/...`. */
  readonly path: string
  readonly query: URLSearchParams
  readonly fragment: string | undefined
}

/**
 * Where an unescaped `/`, `?` or `#` in a password ends the authority early (`u:pa?ss@host`): then an `@`
 * follows that character, with a `:` but no `=` (no query parameter) before it. Returns the `@`'s index in the
 * text after the scheme, or -1.
 */
function misplacedAt(rest: string): number {
  const end = rest.search(/[/?#]/)
  const at = rest.lastIndexOf('@')
  if (end < 0 || at < end || rest.slice(0, end).includes('@')) return -1
  const before = rest.slice(0, at)
  return before.includes(':') && !before.includes('=') ? at : -1
}

const HEAD = /^[A-Za-z][A-Za-z0-9+.-]*:(\/\/)?/

/**
 * `url` as an error message may show it: quoted, password and secret query parameters hidden. A password
 * holding an unescaped `/`, `?` or `#` ends the authority early for `redactUrl`, so then everything up to the
 * `@` counts as userinfo: over-hiding a host beats showing a password.
 */
export function shownUrl(url: string): string {
  const head = HEAD.exec(url)
  if (head === null) return JSON.stringify(redactUrl(url))
  const rest = url.slice(head[0].length)
  const at = misplacedAt(rest)
  if (at < 0) return JSON.stringify(redactUrl(url))
  return JSON.stringify(redactUrl(`${head[0]}${rest.slice(0, rest.indexOf(':'))}:***${rest.slice(at)}`))
}

/** Splits `url` into raw parts; throws `RangeError` when it has no scheme. */
export function splitUrl(url: string): UrlParts {
  if (typeof url !== 'string') throw new TypeError(`latchkey: a backend URL must be a string, received ${typeof url}`)
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):(\/\/)?([^/?#]*)([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/s.exec(url)
  if (m === null)
    throw new RangeError(`latchkey: a backend URL starts with a scheme (redis://...), received ${shownUrl(url)}`)
  if (misplacedAt(url.slice((HEAD.exec(url)?.[0] ?? '').length)) >= 0) {
    throw new RangeError(
      `latchkey: the password (or user) of a backend URL holds an unescaped "/", "?" or "#"; percent-encode it (%2F, %3F, %23), received ${shownUrl(url)}`,
    )
  }
  const authority = m[3] ?? ''
  const at = authority.lastIndexOf('@')
  return {
    scheme: (m[1] ?? '').toLowerCase(),
    slashes: m[2] !== undefined,
    userinfo: at < 0 ? undefined : authority.slice(0, at),
    hosts: at < 0 ? authority : authority.slice(at + 1),
    path: m[4] ?? '',
    query: new URLSearchParams(m[5] ?? ''),
    fragment: m[6],
  }
}

const HOSTNAME = /^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$/
const IPV6 = /^\[[0-9A-Fa-f:.]+(%[A-Za-z0-9]+)?\]$/

/** A port as the URL writes it: 1-65535, digits only (0 would mean "any port" to a socket, or a default). */
export function parsePort(text: string, server: string, url: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN
  if (!(port >= 1 && port <= 65_535)) {
    throw new RangeError(
      `latchkey: port ${JSON.stringify(text)} of server ${JSON.stringify(server)} must be an integer from 1 to 65535, in ${shownUrl(url)}`,
    )
  }
  return port
}

/** One `host[:port]` (`[v6]:port` too); a missing port is `defaultPort`, an empty one (`host:`) is an error. */
export function parseHostPort(text: string, defaultPort: number, url: string): HostPort {
  const v6 = /^(\[[^\]]*\])(?::(.*))?$/.exec(text)
  const colon = text.lastIndexOf(':')
  const host = v6 !== null ? (v6[1] ?? '') : colon < 0 ? text : text.slice(0, colon)
  const port = v6 !== null ? v6[2] : colon < 0 ? undefined : text.slice(colon + 1)
  if (!(HOSTNAME.test(host) || IPV6.test(host))) {
    throw new RangeError(`latchkey: host ${JSON.stringify(host)} is not a host name or IP address, in ${shownUrl(url)}`)
  }
  return { host: host.replace(/^\[(.*)\]$/, '$1'), port: port === undefined ? defaultPort : parsePort(port, text, url) }
}

/** A comma-separated host list (`h1:p1,h2:p2`); at least one host, no empty entries. */
export function parseHostList(list: string, defaultPort: number, url: string): HostPort[] {
  if (list.length === 0) throw new RangeError(`latchkey: the URL names no server (host:port), in ${shownUrl(url)}`)
  return list.split(',').map((item) => {
    if (item.length === 0) throw new RangeError(`latchkey: empty entry in the host list of ${shownUrl(url)}`)
    return parseHostPort(item, defaultPort, url)
  })
}

/** `host:port` as messages show a server (IPv6 in brackets). */
export function formatServer({ host, port }: HostPort): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`
}

/** Throws a `RangeError` listing the known keys when `query` has any other (a misspelled option is not ignored). */
export function checkQueryKeys(query: URLSearchParams, known: readonly string[], scheme: string, url: string): void {
  for (const key of query.keys()) {
    if (!known.includes(key)) {
      const list = known.length === 0 ? 'none' : known.join(', ')
      throw new RangeError(
        `latchkey: unknown option ${JSON.stringify(key)} in ${scheme} URL ${shownUrl(url)}; known options: ${list}`,
      )
    }
  }
}

/** Rejects `user:password@` for schemes whose backend cannot use credentials from the URL. */
export function rejectUserinfo(parts: UrlParts, scheme: string, hint: string, url: string): void {
  if (parts.userinfo !== undefined) {
    throw new RangeError(
      `latchkey: a ${scheme} URL cannot carry credentials (user:password@); ${hint}; received ${shownUrl(url)}`,
    )
  }
}

/** Requires `scheme://`: `redis:/host` (one slash) would otherwise read as a path and the host fall back to a default. */
export function requireSlashes(parts: UrlParts, example: string, url: string): void {
  if (!parts.slashes)
    throw new RangeError(
      `latchkey: a ${parts.scheme} URL looks like ${example} (two slashes after the scheme), received ${shownUrl(url)}`,
    )
}

/** Rejects a `#fragment`, which no backend reads (often a password with an unescaped `#`). */
export function rejectFragment(parts: UrlParts, url: string): void {
  if (parts.fragment !== undefined) {
    throw new RangeError(
      `latchkey: a backend URL has no #fragment (escape "#" in a password as %23), received ${shownUrl(url)}`,
    )
  }
}

/** A numeric query option, or undefined when absent; `RangeError` naming it when not a number >= `min`. */
export function numberOption(
  query: URLSearchParams,
  key: string,
  min: number,
  url: string,
  integer = true,
): number | undefined {
  const text = query.get(key)
  if (text === null) return undefined
  const value = text.trim() === '' ? Number.NaN : Number(text)
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw new RangeError(
      `latchkey: URL option ${key} must be ${integer ? 'an integer' : 'a number'} >= ${min}, received ${JSON.stringify(text)} in ${shownUrl(url)}`,
    )
  }
  return value
}

/** A query option restricted to `choices`, or undefined when absent. */
export function choiceOption<T extends string>(
  query: URLSearchParams,
  key: string,
  choices: readonly T[],
  url: string,
): T | undefined {
  const text = query.get(key)
  if (text === null) return undefined
  if (!(choices as readonly string[]).includes(text)) {
    throw new RangeError(
      `latchkey: URL option ${key} must be one of ${choices.join(', ')}, received ${JSON.stringify(text)} in ${shownUrl(url)}`,
    )
  }
  return text as T
}

/**
 * Splits a `scheme://h1:p1,h2:p2[/path][?query]` URL of a backend that takes no credentials from its URL, and
 * checks what every such URL shares: two slashes, no fragment, no `user:password@` (`credentialsHint` says where
 * they go instead). The hosts, path and query are left to the scheme's parser.
 *
 * @example
 * const parts = splitServerListUrl(url, 'etcd', 'etcd://h1:2379,h2:2379', 'pass an etcd3 client with auth instead')
 */
export function splitServerListUrl(url: string, scheme: string, example: string, credentialsHint: string): UrlParts {
  const parts = splitUrl(url)
  requireSlashes(parts, example, url)
  rejectFragment(parts, url)
  rejectUserinfo(parts, scheme, credentialsHint, url)
  return parts
}

/** A URL with exactly one server and optional `user:password@`, checked part by part. */
export interface SingleHostUrl {
  readonly parts: UrlParts
  readonly server: HostPort
  /** Decoded; undefined without userinfo. */
  readonly username: string | undefined
  readonly password: string | undefined
}

/**
 * Checks `scheme://[user[:password]@]host[:port][/path][?query]` with one server: two slashes, a valid host,
 * a port 1-65535 (`defaultPort` when absent), no fragment. The path and query are left to the scheme's parser.
 */
export function parseSingleHostUrl(url: string, defaultPort: number, example: string): SingleHostUrl {
  const parts = splitUrl(url)
  requireSlashes(parts, example, url)
  rejectFragment(parts, url)
  if (parts.hosts.includes(',')) {
    throw new RangeError(`latchkey: a ${parts.scheme} URL names one server (${example}), received ${shownUrl(url)}`)
  }
  const server = parseHostList(parts.hosts, defaultPort, url)[0] as HostPort
  // Every part is known good by now; WHATWG URL does the percent-decoding of the credentials.
  let username: string | undefined
  let password: string | undefined
  try {
    const parsed = new URL(url)
    username = parts.userinfo === undefined ? undefined : decodeURIComponent(parsed.username)
    password = parts.userinfo?.includes(':') === true ? decodeURIComponent(parsed.password) : undefined
  } catch {
    throw new RangeError(
      `latchkey: not a valid URL (check the percent-encoding of user and password): ${shownUrl(url)}`,
    )
  }
  return { parts, server, username, password }
}
