import { delUnlockStrategy } from '../naive/del-unlock.js'
import { getsetTimestampStrategy } from '../naive/getset-timestamp.js'
import { setnxExpireStrategy } from '../naive/setnx-expire.js'
import { ttlCheckStrategy } from '../naive/ttl-check.js'
import { zkHerdStrategy } from '../naive/zk-herd.js'
import { latchkeyStrategy } from './latchkey-strategy.js'
import type { Strategy, StrategyContext } from './strategy.js'

/** Every strategy a lab client can run, by the name scenarios use. */
export const STRATEGIES: Record<string, (context: StrategyContext) => Promise<Strategy>> = {
  latchkey: latchkeyStrategy,
  'naive-setnx-expire': setnxExpireStrategy,
  'naive-getset-timestamp': getsetTimestampStrategy,
  'naive-del-unlock': delUnlockStrategy,
  'naive-ttl-check': ttlCheckStrategy,
  'naive-zk-herd': zkHerdStrategy,
}
