import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

/**
 * Apache Curator's InterProcessMutex as a contender of latchkey's ZooKeeper bench (bench/zookeeper-curator.ts),
 * running the same two cells as bench/lib/modes.ts, in one JVM kept warm across cells (so the JIT's warm-up is
 * never counted against Curator). Usage: CuratorBench <connectString> <basePath> <sessions>. It opens <sessions>
 * clients (waiters are spread over them as latchkey's over its worker processes), warms up, prints `ready`,
 * then answers one command per stdin line with one JSON line:
 *   uncontended <concurrency> <startAt> <endAt>
 *       concurrency threads on client 0, each acquire+release in a loop on its own path, as modes.ts `uncontended`
 *   contended <waiters> <startAt> <measureFrom> <endAt> <holdMs> <thinkMs>
 *       waiters threads on one path: acquire, hold, release, think; [acquiredAt, releaseCalledAt, waiterId] each
 *   quit
 * Times are host-monotonic ms: System.nanoTime() and Node's process.hrtime() both read CLOCK_MONOTONIC on Linux.
 */
public final class CuratorBench {
  private static CuratorFramework[] clients;
  private static String base;
  private static int cell;

  public static void main(String[] args) throws Exception {
    base = args[1];
    clients = new CuratorFramework[Integer.parseInt(args[2])];
    for (int i = 0; i < clients.length; i++) {
      clients[i] = CuratorFrameworkFactory.newClient(args[0], 10_000, 5_000, new RetryNTimes(3, 100));
      clients[i].start();
      clients[i].blockUntilConnected();
    }
    warmUp();
    System.out.println("ready");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null && !line.equals("quit"); line = in.readLine()) {
      String[] a = line.trim().split(" ");
      cell++;
      String out = a[0].equals("uncontended")
          ? uncontended(Integer.parseInt(a[1]), Double.parseDouble(a[2]), Double.parseDouble(a[3]))
          : contended(Integer.parseInt(a[1]), Double.parseDouble(a[2]), Double.parseDouble(a[3]),
              Double.parseDouble(a[4]), Long.parseLong(a[5]), Long.parseLong(a[6]));
      System.out.println(out);
    }
    try {
      clients[0].delete().deletingChildrenIfNeeded().forPath(base);
    } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
      // Several JVMs may share one base path (bench/zookeeper-layouts.ts): another one deleted it first.
    }
    for (CuratorFramework c : clients) c.close();
  }

  static double now() {
    return System.nanoTime() / 1e6;
  }

  static void until(double at) throws InterruptedException {
    double ms = at - now();
    if (ms > 0) TimeUnit.MICROSECONDS.sleep((long) (ms * 1000));
  }

  static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  /** About 1.5 s of acquire+release on every client: the JIT compiles Curator's and ZooKeeper's hot paths. */
  static void warmUp() throws Exception {
    double end = now() + 1_500;
    int i = 0;
    while (now() < end) {
      InterProcessMutex m = new InterProcessMutex(clients[i % clients.length], base + "/warm");
      m.acquire();
      m.release();
      i++;
    }
  }

  static String uncontended(int concurrency, double startAt, double endAt) throws Exception {
    List<Double> lat = Collections.synchronizedList(new ArrayList<>());
    Thread[] threads = new Thread[concurrency];
    // When each loop really began: on a loaded host a thread (or this one) can wake well after startAt, and the
    // window is timed from the first loop's start, as modes.ts times the Node loops from its own wake-up.
    double[] began = new double[concurrency];
    for (int t = 0; t < concurrency; t++) {
      InterProcessMutex mutex = new InterProcessMutex(clients[0], base + "/c" + cell + "-u" + t);
      int index = t;
      threads[t] = new Thread(() -> {
        try {
          until(startAt);
          began[index] = now();
          while (now() < endAt) {
            double s = now();
            mutex.acquire();
            lat.add(now() - s);
            mutex.release();
          }
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
    }
    for (Thread t : threads) t.start();
    until(startAt);
    long cpu0 = cpuNanos();
    for (Thread t : threads) t.join();
    double t0 = Double.MAX_VALUE;
    for (double b : began) t0 = Math.min(t0, b);
    double seconds = (now() - t0) / 1000;
    double cpuMs = (cpuNanos() - cpu0) / 1e6;
    List<Double> sorted = new ArrayList<>(lat);
    Collections.sort(sorted);
    return String.format(java.util.Locale.ROOT, "{\"ops\":%d,\"seconds\":%.6f,\"latP50\":%.4f,\"latP99\":%.4f,\"cpuMs\":%.3f}",
        sorted.size(), seconds, pct(sorted, 50), pct(sorted, 99), cpuMs);
  }

  static double pct(List<Double> sorted, double p) {
    if (sorted.isEmpty()) return Double.NaN;
    int i = (int) Math.min(sorted.size() - 1, Math.ceil(p / 100 * sorted.size()) - 1);
    return sorted.get(Math.max(0, i));
  }

  static String contended(int waiters, double startAt, double measureFrom, double endAt, long holdMs, long thinkMs)
      throws Exception {
    String path = base + "/c" + cell + "-w";
    List<double[]> intervals = Collections.synchronizedList(new ArrayList<>());
    int[] giveUps = new int[1];
    Thread[] threads = new Thread[waiters];
    for (int w = 0; w < waiters; w++) {
      int id = w;
      InterProcessMutex mutex = new InterProcessMutex(clients[w % clients.length], path);
      threads[w] = new Thread(() -> {
        try {
          until(startAt);
          // Waiters start spread over the first millisecond, as in modes.ts.
          Thread.sleep(id % 2);
          while (now() < endAt) {
            long waitMs = Math.max(1, (long) Math.ceil(endAt - now()));
            boolean got = mutex.acquire(waitMs, TimeUnit.MILLISECONDS);
            double at = now();
            if (!got) {
              if (at < endAt && at >= measureFrom) synchronized (giveUps) { giveUps[0]++; }
              continue;
            }
            if (at >= endAt) {
              mutex.release();
              break;
            }
            Thread.sleep(holdMs);
            if (at >= measureFrom) intervals.add(new double[] {at, now(), id});
            mutex.release();
            Thread.sleep(thinkMs);
          }
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
    }
    for (Thread t : threads) t.start();
    until(measureFrom);
    long cpu0 = cpuNanos();
    until(endAt);
    double cpuMs = (cpuNanos() - cpu0) / 1e6;
    for (Thread t : threads) t.join();
    StringBuilder sb = new StringBuilder("{\"intervals\":[");
    synchronized (intervals) {
      for (int i = 0; i < intervals.size(); i++) {
        double[] v = intervals.get(i);
        if (i > 0) sb.append(',');
        sb.append(String.format(java.util.Locale.ROOT, "%.4f,%.4f,%d", v[0], v[1], (int) v[2]));
      }
    }
    sb.append(String.format(java.util.Locale.ROOT, "],\"giveUps\":%d,\"cpuMs\":%.3f}", giveUps[0], cpuMs));
    return sb.toString();
  }
}
