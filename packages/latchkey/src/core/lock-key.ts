/**
 * The backend key of a lock. Without a namespace it is the name itself, verbatim, so that other clients of the
 * same server (Redisson, a script) find the lock by its plain name. With one, the namespace is escaped (`%` ->
 * `%25`, `:` -> `%3A`) before `:name` is appended: the first `:` of the key then always ends the namespace, so
 * two (namespace, name) pairs never share a key (`a` + `b:c` is `a:b:c`, `a:b` + `c` is `a%3Ab:c`).
 */

/** `namespace` as it appears in keys: `%` and `:` percent-encoded, everything else as is. */
export function escapeNamespace(namespace: string): string {
  return namespace.replace(/%/g, '%25').replace(/:/g, '%3A')
}

/**
 * The key a backend stores `name` under in `namespace` (`''`: no namespace).
 *
 * @example
 * lockKey('', 'order:42')     // 'order:42'
 * lockKey('shop', 'order:42') // 'shop:order:42'
 * lockKey('a:b', 'c')         // 'a%3Ab:c'
 */
export function lockKey(namespace: string, name: string): string {
  return namespace === '' ? name : `${escapeNamespace(namespace)}:${name}`
}
