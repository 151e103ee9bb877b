import type { TxParkedError } from '../errors.js'

/** Thrown inside a drive when this coordinator must stop acting (lease lost, closing); recovery goes on. */
export class StopDriving extends Error {
  override name = 'StopDriving'
}

/** Thrown inside a drive when an operation ran out of retries and the transaction was parked. */
export class Parked extends Error {
  override name = 'Parked'
  constructor(readonly error: TxParkedError) {
    super(error.message)
  }
}
