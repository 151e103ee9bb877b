import type { ScenarioNeeds } from '../scenario-def.js'
import type { SessionInfo } from './end-session.js'
import type { Setup } from './fault-deployments.js'
import type { CutWhich } from './netns-clusters.js'

/** The faults a prepared target lets the nemesis inject; each is there only where the deployment can do it. */
export interface FaultHooks {
  /** For a server the lab owns: kill it and start it again (server-kill scenarios). */
  restartServer?: (downMs: number) => Promise<void>
  /** For a server the lab owns: freeze it for `ms` (server-pause scenarios). */
  pauseServer?: (ms: number) => Promise<void>
  /** Whether client process `pid` talks to a follower of the lock cluster (cluster-partition scenarios). */
  onFollower?: (pid: number) => Promise<boolean>
  /** Cuts a member of the lock cluster off from the others for `ms` (cluster-partition scenarios). */
  partitionCluster?: (which: CutWhich, pid: number, ms: number) => Promise<string>
  /** The server ends client process `pid`'s lock session (session-kill scenarios); says what it did. */
  endSession?: (pid: number, session: SessionInfo | undefined) => Promise<string>
  /** For a server on a fake clock: step its wall clock by `ms` (server-clock scenarios). */
  jumpServerClock?: (ms: number) => void
  /** Added to every client's environment (SQLite on a fake clock: the clients' clock is the lock's). */
  clientEnv?: Record<string, string>
  /** For a replicated Redis: kill the primary and promote its replica (failover scenarios). */
  failover?: () => Promise<void>
}

/** Where a lab client's lock lives: a URL its strategy opens, how to remove what the run left there, and its fault hooks. */
export interface Prepared extends FaultHooks {
  url: string
  cleanup(): Promise<void>
}

/** A backend the lab can run against. `shared` ones are the machine's shared servers (only our clients pause). */
export interface Target {
  name: string
  shared: boolean
  /** The lab can kill, restart and freeze the server (its own, or a private instance it starts for the purpose). */
  restartable: boolean
  /** The server can end one client's lock session (T8). */
  endsSessions: boolean
  /** A cluster whose members the lab can partition from each other (T9, in lab/netns.sh's namespaces). */
  partitionable?: boolean
  /** A durable server whose disk the lab can make lose its un-fsynced writes (T13, lazy_fs.py). */
  losesPower?: boolean
  /** Clients reach the lock service over TCP (a network fault can cut them off); false for an embedded file. */
  networked: boolean
  /**
   * The backend hands out fencing tokens. RedLock does not (no sound token exists across independent masters),
   * nor do the session-held locks (PostgreSQL advisory, MariaDB GET_LOCK): the lab runs them with fencing off
   * only, since a fence that compares tokens that are all 0 admits everything and would be no fence at all.
   */
  fenced: boolean
  /**
   * `needs`: what the run's scenario needs. `server`: it faults the server itself, so a shared server is replaced
   * by a private instance; `partition`: the cluster runs in network namespaces.
   */
  prepare(namespace: string, runDataDir: string, needs?: ScenarioNeeds): Promise<Prepared>
  /** The deployment a clock or failover scenario needs, where this target has it. */
  prepareWith?(setup: Setup, namespace: string, runDataDir: string): Promise<Prepared>
}
