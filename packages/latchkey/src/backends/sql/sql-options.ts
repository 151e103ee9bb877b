/** Options both SQL backend factories (`mysqlBackend`, `postgresBackend`) read the same way. */

/**
 * The `strategy` option: `strategies[0]` (the default) when unset, a `RangeError` naming the factory, the
 * choices and the value received otherwise.
 *
 * @example
 * strategyOption('mysqlBackend', ['table', 'get_lock'], options.strategy) // 'table' when unset
 */
export function strategyOption<S extends string>(factory: string, strategies: readonly S[], value: unknown): S {
  const strategy = value ?? strategies[0]
  if (!strategies.includes(strategy as S)) {
    throw new RangeError(
      `latchkey: ${factory} strategy must be one of ${strategies.join(', ')}, received ${String(value)}`,
    )
  }
  return strategy as S
}

/** How messages name the backend and its server (`mysql backend at 127.0.0.1:3306`), when the pool tells it. */
export function backendLabel(engine: string, server: string | undefined): string {
  return server === undefined ? `${engine} backend` : `${engine} backend at ${server}`
}
