import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.UUID;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;

/**
 * A Java service using Apache Curator's own lock recipes on a path latchkey's `layout: 'curator'` also uses
 * (packages/latchkey/test/curator-interop.test.ts). Usage:
 *   CuratorHolder <connectString> <mutex|rw|semaphore> <path> <iterations> <dataPath> [permits]
 * mutex: each hold increments the counter in file <dataPath> (read, pause, write: a lost update shows a second
 *   holder); rw: a writer thread does the same under the write lock while a reader thread reads the counter twice
 *   around a pause under the read lock and counts the changes it sees (violations);
 * semaphore: each hold adds a file to directory <dataPath>, pauses, counts the files (the holders at once).
 * Prints `ready` once connected, waits for a line on stdin, then runs and prints `done <violations> <max>`.
 */
public final class CuratorHolder {
  public static void main(String[] args) throws Exception {
    String kind = args[1];
    String path = args[2];
    int iterations = Integer.parseInt(args[3]);
    Path data = Paths.get(args[4]);
    int permits = args.length > 5 ? Integer.parseInt(args[5]) : 1;
    try (CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 6000, 5000, new RetryNTimes(3, 100))) {
      client.start();
      client.blockUntilConnected();
      System.out.println("ready");
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      int violations = 0;
      int max = 0;
      if (kind.equals("semaphore")) {
        InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, permits);
        for (int i = 0; i < iterations; i++) {
          Lease lease = semaphore.acquire();
          try {
            Path mine = data.resolve("java-" + UUID.randomUUID());
            Files.createFile(mine);
            Thread.sleep(3);
            try (var files = Files.list(data)) {
              max = Math.max(max, (int) files.count());
            }
            Files.delete(mine);
          } finally {
            semaphore.returnLease(lease);
          }
        }
      } else if (kind.equals("rw")) {
        // A reader and a writer thread, each with its own InterProcessReadWriteLock (own nodes) on the path.
        int[] changed = new int[1];
        Thread reader = new Thread(() -> changed[0] = run(new InterProcessReadWriteLock(client, path).readLock(), true, iterations, data));
        reader.start();
        violations = run(new InterProcessReadWriteLock(client, path).writeLock(), false, iterations, data);
        reader.join();
        violations += changed[0];
      } else {
        InterProcessLock lock = kind.equals("mutex") ? new InterProcessMutex(client, path) : null;
        if (lock == null) throw new IllegalArgumentException("kind " + kind);
        violations = run(lock, false, iterations, data);
      }
      System.out.println("done " + violations + " " + max);
    }
  }

  /** Holds `lock` `iterations` times: a writer increments the counter file, a reader counts changes it sees. */
  private static int run(InterProcessLock lock, boolean reads, int iterations, Path data) {
    int changes = 0;
    try {
      for (int i = 0; i < iterations; i++) {
        lock.acquire();
        try {
          String before = Files.readString(data).trim();
          Thread.sleep(2);
          if (reads) {
            if (!Files.readString(data).trim().equals(before)) changes++;
          } else {
            Files.writeString(data, Long.toString(Long.parseLong(before) + 1));
          }
        } finally {
          lock.release();
        }
      }
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
    return changes;
  }
}
