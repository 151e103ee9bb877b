/**
 * `etcd://h1:2379,h2:2379[?prefix=&callTimeoutMs=&layout=etcd]` and the `http(s)://host:port` endpoints of `hosts`, checked
 * before etcd3 sees them: grpc-js takes a bad port or a `user:password@` endpoint as a target that never
 * connects, and echoes the whole endpoint (password included) in its errors.
 */
import {
  checkQueryKeys,
  formatServer,
  numberOption,
  parseHostList,
  parseHostPort,
  rejectUserinfo,
  shownUrl,
  splitServerListUrl,
  splitUrl,
} from '../../backend/url-parts.js'
import type { EtcdBackendOptions } from './etcd-backend.js'

const KNOWN = ['prefix', 'callTimeoutMs', 'layout'] as const

/** Parses and checks an `etcd://` URL into {@link EtcdBackendOptions} (one `http://` endpoint per host). */
export function parseEtcdUrl(url: string): EtcdBackendOptions & { hosts: string[] } {
  const parts = splitServerListUrl(
    url,
    'etcd',
    'etcd://h1:2379,h2:2379',
    'pass etcdBackend({ client }) with an etcd3 client configured with auth instead',
  )
  if (parts.path !== '' && parts.path !== '/') {
    throw new RangeError(
      `latchkey: an etcd URL has no path (set the key prefix with ?prefix=), received ${JSON.stringify(parts.path)} in ${shownUrl(url)}`,
    )
  }
  checkQueryKeys(parts.query, KNOWN, 'etcd', url)
  if (parts.hosts.length === 0) {
    throw new RangeError(`latchkey: an etcd URL needs hosts (etcd://h1:2379), received ${shownUrl(url)}`)
  }
  const hosts = parseHostList(parts.hosts, 2379, url).map((server) => `http://${formatServer(server)}`)
  const prefix = parts.query.get('prefix')
  const layout = parts.query.get('layout')
  if (layout !== null && layout !== 'latchkey' && layout !== 'etcd') {
    throw new RangeError(
      `latchkey: an etcd URL's layout is latchkey or etcd, received ${JSON.stringify(layout)} in ${shownUrl(url)}`,
    )
  }
  const callTimeoutMs = numberOption(parts.query, 'callTimeoutMs', 1, url)
  return {
    hosts,
    ...(prefix === null ? {} : { prefix }),
    ...(layout === null ? {} : { layout }),
    ...(callTimeoutMs === undefined ? {} : { callTimeoutMs }),
  }
}

/**
 * Checks the endpoints given as `hosts` (`http://127.0.0.1:2379`, `https://...`; a bare `host:port` is taken as
 * `http://`) and returns them normalised. Throws `RangeError` naming the bad endpoint, password hidden.
 */
export function checkEtcdHosts(hosts: readonly string[]): string[] {
  return hosts.map((endpoint) => {
    const withScheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(endpoint) ? endpoint : `http://${endpoint}`
    const parts = splitUrl(withScheme)
    if (parts.scheme !== 'http' && parts.scheme !== 'https') {
      throw new RangeError(`latchkey: an etcd endpoint starts with http:// or https://, received ${shownUrl(endpoint)}`)
    }
    rejectUserinfo(parts, 'etcd endpoint', 'pass an etcd3 client configured with auth instead', endpoint)
    if (
      (parts.path !== '' && parts.path !== '/') ||
      parts.fragment !== undefined ||
      [...parts.query.keys()].length > 0
    ) {
      throw new RangeError(`latchkey: an etcd endpoint is scheme://host:port only, received ${shownUrl(endpoint)}`)
    }
    if (parts.hosts.includes(',')) {
      throw new RangeError(`latchkey: one etcd endpoint per entry of hosts, received ${shownUrl(endpoint)}`)
    }
    return `${parts.scheme}://${formatServer(parseHostPort(parts.hosts, 2379, endpoint))}`
  })
}
