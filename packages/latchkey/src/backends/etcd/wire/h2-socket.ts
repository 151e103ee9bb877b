/** The socket under an HTTP/2 session (h2-session.ts): plain for `http:` endpoints, TLS with ALPN `h2` for `https:`. */
import net from 'node:net'
import tls from 'node:tls'
import { readIntoSlabs } from '../../../backend/read-slabs.js'

/**
 * Connects to `endpoint` (`http://host:port` or `https://host:port`, a bracketed IPv6 host allowed) and hands every
 * chunk read to `onChunk`. A plain socket reads into slabs of its own, past node's Readable machinery
 * (backend/read-slabs.ts); TLS keeps the 'data' event. Unreferenced (an idle client does not keep the process alive), no
 * Nagle delay (a call is one write whose answer is awaited).
 */
export function connectH2Socket(endpoint: string, onChunk: (chunk: Buffer) => void): net.Socket {
  const url = new URL(endpoint)
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  const secure = url.protocol === 'https:'
  const port = Number(url.port || (secure ? 443 : 80))
  const socket = secure
    ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ALPNProtocols: ['h2'] })
    : net.connect({ host, port, onread: readIntoSlabs(onChunk) })
  if (secure) socket.on('data', onChunk)
  socket.setNoDelay(true)
  socket.unref()
  return socket
}
