/**
 * Credentials must never reach a log line, an error message or a process's command line. Every place latchkey
 * shows a server address goes through {@link redactUrl}.
 */

/** Query parameters that carry a secret in connection URLs (node-postgres, mysql2, ioredis, amqplib ...). */
const SECRET_PARAMS = /^(password|pass|pwd|passwd|secret|token|auth|authtoken|access_token|sslpassword|sslkey)$/i

/**
 * Returns `url` with its password (and any secret query parameter) replaced by `***`, keeping everything a
 * reader needs to find the server: scheme, user, hosts, port, path. Works on host lists that `new URL()`
 * cannot parse (`zookeeper://u:pw@h1:2181,h2:2181/chroot`). A string that is not a URL comes back unchanged.
 *
 * @example
 * redactUrl('postgres://postgres:s3cret@db:5432/shop?sslmode=require') // 'postgres://postgres:***@db:5432/shop?sslmode=require'
 * redactUrl('redis://:s3cret@127.0.0.1:6379/0')                        // 'redis://:***@127.0.0.1:6379/0'
 */
export function redactUrl(url: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:(\/\/)?/.exec(url)
  if (scheme === null) return url
  let rest = url.slice(scheme[0].length)
  // The authority ends at the first '/', '?' or '#'; its userinfo ends at the last '@' before that.
  const end = rest.search(/[/?#]/)
  const authority = end < 0 ? rest : rest.slice(0, end)
  const at = authority.lastIndexOf('@')
  if (at >= 0) {
    const userinfo = authority.slice(0, at)
    const colon = userinfo.indexOf(':')
    const shown = colon < 0 ? userinfo : `${userinfo.slice(0, colon)}:***`
    rest = `${shown}${rest.slice(at)}`
  }
  const q = rest.indexOf('?')
  if (q >= 0) {
    const hash = rest.indexOf('#', q)
    const query = rest.slice(q + 1, hash < 0 ? undefined : hash)
    const redacted = query
      .split('&')
      .map((pair) => {
        const eq = pair.indexOf('=')
        const key = eq < 0 ? pair : pair.slice(0, eq)
        return eq >= 0 && SECRET_PARAMS.test(decodeURIComponentSafe(key)) ? `${key}=***` : pair
      })
      .join('&')
    rest = `${rest.slice(0, q + 1)}${redacted}${hash < 0 ? '' : rest.slice(hash)}`
  }
  return `${scheme[0]}${rest}`
}

/**
 * Replaces every URL inside `text` (an error message, a driver's error text) by its redacted form, and every
 * occurrence of the `secrets` given (a password the caller knows, e.g. from a client's options).
 */
export function redactText(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(/\b[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>]+/g, (u) => redactUrl(u))
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join('***')
  return out
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
