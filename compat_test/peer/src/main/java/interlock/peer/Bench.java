package interlock.peer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.redisson.api.RFuture;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;

/**
 * Benchmark ops of the peer, used by interlock's bench/ module, not by the
 * interop tests. They run their measured loops inside the JVM so that the
 * JSON pipe is not part of what is measured.
 *
 * <pre>
 * {"op":"bench","kind":"reentrant","name":N,"threads":T,"durationMs":D,"warmupMs":W,"distinctKeys":B}
 *   → {"ops":..,"seconds":..,"opsPerSec":..,"lockP50Us":..,"lockP99Us":..,"lockMaxUs":..,
 *      "pairP50Us":..,"pairP99Us":..,"pairMaxUs":..}
 * {"op":"holdMany","prefix":P,"count":C}   takes C watchdog locks P0..P(C-1) on this thread
 *   → {"count":C,"ms":..,"heapBeforeBytes":..,"heapAfterBytes":..}
 * {"op":"releaseMany","prefix":P}          unlocks what holdMany took under P
 * </pre>
 *
 * Add "latencies":"lock"|"pair" to also get "lat", every sample in ns.
 *
 * In "bench", each of T threads loops lock(); unlock() for W ms (warm-up,
 * discarded) and then for D ms (measured). With distinctKeys every thread
 * has its own lock N:i, otherwise all share N. lock* latencies are the time
 * lock() took; pair* the time of lock() plus unlock().
 *
 * The kinds "semaphore" (RSemaphore: acquire(); release()) and "expirable"
 * (RPermitExpirableSemaphore: acquire(30 s lease), then release(id)) take
 * one permit in place of lock() and give it back in place of unlock().
 * With "permits":P, trySetPermits(P) runs on every name before the loops.
 */
final class Bench {
    private static final Map<String, List<RLock>> HELD = new java.util.concurrent.ConcurrentHashMap<>();

    private Bench() {
    }

    static Object run(Peer peer, Map<String, Object> cmd) throws InterruptedException {
        String kind = Peer.string(cmd, "kind");
        String name = Peer.string(cmd, "name");
        if (kind == null || name == null || name.isEmpty()) {
            throw new IllegalArgumentException("kind and name are required");
        }
        int threads = (int) Peer.number(cmd, "threads", 1);
        long durationMs = Peer.number(cmd, "durationMs", 1000);
        long warmupMs = Peer.number(cmd, "warmupMs", 2000);
        Object d = cmd.get("distinctKeys");
        boolean distinct = d instanceof Boolean && (Boolean) d;
        if (threads < 1 || durationMs < 1 || warmupMs < 0) {
            throw new IllegalArgumentException("threads, durationMs and warmupMs must be positive");
        }
        int permits = (int) Peer.number(cmd, "permits", 0);
        Pair[] locks = new Pair[threads];
        for (int i = 0; i < threads; i++) {
            locks[i] = newPair(peer.redisson, kind, distinct ? name + ":" + i : name, permits);
        }
        if (warmupMs > 0) {
            loop(locks, warmupMs);
        }
        long start = System.nanoTime();
        Result[] rs = loop(locks, durationMs);
        double seconds = (System.nanoTime() - start) / 1e9;

        int n = 0;
        for (Result r : rs) {
            n += r.n;
        }
        long[] lockNs = new long[n];
        long[] pairNs = new long[n];
        int k = 0;
        for (Result r : rs) {
            System.arraycopy(r.lockNs, 0, lockNs, k, r.n);
            System.arraycopy(r.pairNs, 0, pairNs, k, r.n);
            k += r.n;
        }
        Arrays.sort(lockNs);
        Arrays.sort(pairNs);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("ops", (long) n);
        out.put("seconds", seconds);
        out.put("opsPerSec", n / seconds);
        out.put("lockP50Us", pct(lockNs, 0.50));
        out.put("lockP99Us", pct(lockNs, 0.99));
        out.put("lockMaxUs", n == 0 ? 0.0 : lockNs[n - 1] / 1e3);
        out.put("pairP50Us", pct(pairNs, 0.50));
        out.put("pairP99Us", pct(pairNs, 0.99));
        out.put("pairMaxUs", n == 0 ? 0.0 : pairNs[n - 1] / 1e3);
        // "latencies": "lock" or "pair" also returns every sample, in ns,
        // in completion order per thread.
        String which = Peer.string(cmd, "latencies");
        if (which != null) {
            List<Object> lat = new ArrayList<>(n);
            for (Result r : rs) {
                long[] src = which.equals("lock") ? r.lockNs : r.pairNs;
                for (int j = 0; j < r.n; j++) {
                    lat.add(src[j]);
                }
            }
            out.put("lat", lat);
        }
        return out;
    }

    /** One thread's acquire and release: a lock, or one permit. */
    private interface Pair {
        void acquire() throws InterruptedException;

        void release();
    }

    /** The watchdog's lease, given to each expirable permit. */
    private static final long PERMIT_LEASE_MS = 30_000;

    private static Pair newPair(RedissonClient r, String kind, String name, int permits) {
        switch (kind) {
            case "semaphore": {
                RSemaphore s = r.getSemaphore(name);
                if (permits > 0) {
                    s.trySetPermits(permits);
                }
                return new Pair() {
                    public void acquire() throws InterruptedException {
                        s.acquire();
                    }

                    public void release() {
                        s.release();
                    }
                };
            }
            case "expirable": {
                RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(name);
                if (permits > 0) {
                    s.trySetPermits(permits);
                }
                return new Pair() {
                    private String id;

                    public void acquire() throws InterruptedException {
                        id = s.acquire(PERMIT_LEASE_MS, TimeUnit.MILLISECONDS);
                    }

                    public void release() {
                        s.release(id);
                    }
                };
            }
            default: {
                RLock l = newLock(r, kind, name);
                return new Pair() {
                    public void acquire() {
                        l.lock();
                    }

                    public void release() {
                        l.unlock();
                    }
                };
            }
        }
    }

    private static RLock newLock(RedissonClient r, String kind, String name) {
        switch (kind) {
            case "reentrant":
                return r.getLock(name);
            case "fair":
                return r.getFairLock(name);
            case "read":
                return r.getReadWriteLock(name).readLock();
            case "write":
                return r.getReadWriteLock(name).writeLock();
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    private static double pct(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e3;
    }

    private static final class Result {
        long[] lockNs = new long[1024];
        long[] pairNs = new long[1024];
        int n;

        void add(long lock, long pair) {
            if (n == lockNs.length) {
                lockNs = Arrays.copyOf(lockNs, n * 2);
                pairNs = Arrays.copyOf(pairNs, n * 2);
            }
            lockNs[n] = lock;
            pairNs[n] = pair;
            n++;
        }
    }

    /** Runs one thread per lock for ms milliseconds; every thread starts together. */
    private static Result[] loop(Pair[] locks, long ms) throws InterruptedException {
        int t = locks.length;
        Result[] rs = new Result[t];
        CountDownLatch ready = new CountDownLatch(t);
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(t);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long[] deadline = new long[1];
        for (int i = 0; i < t; i++) {
            final int idx = i;
            rs[i] = new Result();
            Thread th = new Thread(() -> {
                Pair l = locks[idx];
                Result r = rs[idx];
                try {
                    ready.countDown();
                    go.await();
                    long end = deadline[0];
                    while (true) {
                        long s = System.nanoTime();
                        if (s - end >= 0) {
                            break;
                        }
                        l.acquire();
                        long m = System.nanoTime();
                        l.release();
                        r.add(m - s, System.nanoTime() - s);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                } finally {
                    done.countDown();
                }
            }, "bench-" + i);
            th.setDaemon(true);
            th.start();
        }
        ready.await();
        deadline[0] = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        go.countDown();
        done.await();
        if (failure.get() != null) {
            Throwable e = failure.get();
            throw new IllegalStateException("bench thread failed: " + e, e);
        }
        return rs;
    }

    static Object holdMany(Peer peer, Map<String, Object> cmd) throws InterruptedException {
        String prefix = Peer.string(cmd, "prefix");
        long count = Peer.number(cmd, "count", 0);
        if (prefix == null || prefix.isEmpty() || count < 1) {
            throw new IllegalArgumentException("prefix and a positive count are required");
        }
        long heapBefore = usedHeap();
        long threadId = Thread.currentThread().getId();
        long start = System.nanoTime();
        Semaphore inFlight = new Semaphore(512);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<RLock> held = new ArrayList<>((int) count);
        for (long i = 0; i < count && failure.get() == null; i++) {
            RLock l = peer.redisson.getLock(prefix + i);
            held.add(l);
            inFlight.acquire();
            RFuture<Void> f = l.lockAsync(threadId);
            f.whenComplete((v, e) -> {
                if (e != null) {
                    failure.compareAndSet(null, e);
                }
                inFlight.release();
            });
        }
        inFlight.acquire(512);
        inFlight.release(512);
        if (failure.get() != null) {
            throw new IllegalStateException("holdMany: " + failure.get(), failure.get());
        }
        double ms = (System.nanoTime() - start) / 1e6;
        HELD.put(prefix, held);
        long heapAfter = usedHeap();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("count", count);
        out.put("ms", ms);
        out.put("heapBeforeBytes", heapBefore);
        out.put("heapAfterBytes", heapAfter);
        return out;
    }

    static Object releaseMany(Peer peer, Map<String, Object> cmd) throws InterruptedException {
        String prefix = Peer.string(cmd, "prefix");
        List<RLock> held = prefix == null ? null : HELD.remove(prefix);
        if (held == null) {
            throw new IllegalArgumentException("nothing held under prefix " + prefix);
        }
        long threadId = Thread.currentThread().getId();
        Semaphore inFlight = new Semaphore(512);
        for (RLock l : held) {
            inFlight.acquire();
            l.unlockAsync(threadId).whenComplete((v, e) -> inFlight.release());
        }
        inFlight.acquire(512);
        return (long) held.size();
    }

    private static long usedHeap() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return rt.totalMemory() - rt.freeMemory();
    }
}
