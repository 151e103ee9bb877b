import { etcdCluster, zookeeperEnsemble } from './clusters.js'
import { cluster } from './lab-servers.js'
import { deleteEtcdPrefix, removeZkTree } from './lock-cleanup.js'
import { type NetnsCluster, netnsEtcd, netnsZookeeper } from './netns-clusters.js'
import type { Prepared, Target } from './target.js'

/**
 * The three-member ZooKeeper and etcd clusters the lab runs for itself: server faults strike the leader, and a
 * partition scenario (T9) gets a cluster in network namespaces whose members the lab can cut off from each other.
 */

/** A run on a cluster in network namespaces (T9): its URL, its cleanup, and the partition hook. */
function netnsPrepared(namespace: string, c: NetnsCluster): Prepared {
  const hosts = c.url.replace(/^\w+:\/\//, '')
  const isZookeeper = c.url.startsWith('zookeeper')
  return {
    url: isZookeeper ? `${c.url}/${namespace}?sessionTimeoutMs=4000` : `${c.url}?prefix=${namespace}`,
    cleanup: () => (isZookeeper ? removeZkTree(`/${namespace}`, hosts) : deleteEtcdPrefix(namespace, hosts)),
    partitionCluster: (which, pid, ms) => c.partition(which, pid, ms),
    onFollower: (pid) => c.onFollower(pid),
  }
}

/** A three-member cluster of the lab's: server faults strike its leader, and its members can be partitioned. */
const clusterTarget = (name: string, prepare: Target['prepare']): Target => ({
  name,
  shared: false,
  restartable: true,
  endsSessions: false,
  partitionable: true,
  networked: true,
  fenced: true,
  prepare,
})

/** The lab's three-member ZooKeeper ensemble. */
export const zookeeperEnsembleTarget = clusterTarget('zookeeper-3', async (namespace, dataRoot, needs) => {
  if (needs === 'partition')
    return netnsPrepared(namespace, await cluster('zookeeper-netns', () => netnsZookeeper(dataRoot)))
  const ensemble = await cluster('zookeeper-3', zookeeperEnsemble)
  const hosts = ensemble.url.replace('zookeeper://', '')
  return {
    url: `${ensemble.url}/${namespace}?sessionTimeoutMs=4000`,
    cleanup: () => removeZkTree(`/${namespace}`, hosts),
    restartServer: (downMs) => ensemble.killLeader(downMs),
    pauseServer: (ms) => ensemble.pauseLeader(ms),
  }
})

/** The lab's three-member etcd cluster. */
export const etcdClusterTarget = clusterTarget('etcd-3', async (namespace, dataRoot, needs) => {
  if (needs === 'partition') return netnsPrepared(namespace, await cluster('etcd-netns', () => netnsEtcd(dataRoot)))
  const members = await cluster('etcd-3', () => etcdCluster(dataRoot))
  return {
    url: `${members.url}?prefix=${namespace}`,
    cleanup: () => deleteEtcdPrefix(namespace, members.url.replace('etcd://', '')),
    restartServer: (downMs) => members.killLeader(downMs),
    pauseServer: (ms) => members.pauseLeader(ms),
  }
})
