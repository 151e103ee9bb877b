/**
 * The watches a wire client holds, with node-zookeeper-client's semantics (which the backend was written for): a
 * watcher function per path and kind, set when the read that asked for it succeeds, called once (ZooKeeper's
 * watches are one-shot) by the events that fire that kind. Kept to be set again on a reconnect (SetWatches).
 */
import type { ZkEvent } from '../zk-client.js'

/** A watch's callback (node-zookeeper-client's shape). */
export type Watcher = (event: ZkEvent) => void

/** Watch event types (Watcher.Event.EventType). */
const NODE_DELETED = 2
const NODE_CHILDREN_CHANGED = 4

export class ZkWatches {
  /** getData (and exists on a node that is there) watches. */
  private readonly data = new Map<string, Set<Watcher>>()
  /** getChildren watches. */
  private readonly child = new Map<string, Set<Watcher>>()

  add(kind: 'data' | 'child', path: string, watcher: Watcher): void {
    const map = kind === 'data' ? this.data : this.child
    const set = map.get(path)
    if (set === undefined) map.set(path, new Set([watcher]))
    else set.add(watcher)
  }

  /** Calls (and forgets) the watchers an event of `type` on `path` fires: data ones but for a child change, child ones on a child change or the node's deletion. */
  fire(type: number, path: string): void {
    const event: ZkEvent = { type, path }
    const data = type === NODE_CHILDREN_CHANGED ? undefined : this.take(this.data, path)
    const child = type === NODE_DELETED || type === NODE_CHILDREN_CHANGED ? this.take(this.child, path) : undefined
    for (const watcher of data ?? []) watcher(event)
    for (const watcher of child ?? []) watcher(event)
  }

  /** The watched paths, for SetWatches; undefined when none. */
  paths(): { data: string[]; child: string[] } | undefined {
    if (this.data.size === 0 && this.child.size === 0) return undefined
    return { data: [...this.data.keys()], child: [...this.child.keys()] }
  }

  private take(map: Map<string, Set<Watcher>>, path: string): Set<Watcher> | undefined {
    const set = map.get(path)
    if (set !== undefined) map.delete(path)
    return set
  }
}
