package interlock.peer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.redisson.api.RRateLimiter;
import org.redisson.api.RateLimiterConfig;
import org.redisson.api.RateType;

/**
 * The peer's rate limiter ops, kind "ratelimit" (RRateLimiter, the same API in
 * Redisson 3.52.0 and 4.7.0):
 *
 * <pre>
 * trySetRate rateType rate intervalMs keepAliveMs   trySetRate(type, rate, interval, keepAlive) (bool)
 * setRate    rateType rate intervalMs keepAliveMs   setRate(type, rate, interval, keepAlive) (null)
 * tryAcquire permits waitMs                         tryAcquire(permits) for waitMs -1, else
 *                                                   tryAcquire(permits, waitMs) (bool)
 * acquire    permits                                acquire(permits) (null)
 * release    permits                                release(permits) (null)
 * availablePermits                                  (long)
 * getConfig                                         {"rateType","rate","intervalMs"}
 * expire     ttlMs                                  expire(ttl) (bool)
 * delete                                            (bool)
 * drain      durationMs threads                     threads threads each call tryAcquire(1, the time
 *                                                   left) until durationMs has passed (the granted count)
 * </pre>
 *
 * rateType is OVERALL or PER_CLIENT (RateType's names).
 */
final class RateLimit {
    private RateLimit() {
    }

    static boolean handles(String kind) {
        return "ratelimit".equals(kind);
    }

    static Object execute(Peer peer, String op, Map<String, Object> cmd) throws InterruptedException {
        String name = Peer.string(cmd, "name");
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("name is required");
        }
        RRateLimiter l = peer.redisson.getRateLimiter(name);
        switch (op) {
            case "trySetRate":
                return l.trySetRate(type(cmd), Peer.number(cmd, "rate", 0),
                        Duration.ofMillis(Peer.number(cmd, "intervalMs", 0)),
                        Duration.ofMillis(Peer.number(cmd, "keepAliveMs", 0)));
            case "setRate":
                l.setRate(type(cmd), Peer.number(cmd, "rate", 0),
                        Duration.ofMillis(Peer.number(cmd, "intervalMs", 0)),
                        Duration.ofMillis(Peer.number(cmd, "keepAliveMs", 0)));
                return null;
            case "tryAcquire": {
                long wait = Peer.number(cmd, "waitMs", 0);
                long permits = Peer.number(cmd, "permits", 1);
                if (wait == -1) {
                    return l.tryAcquire(permits);
                }
                return l.tryAcquire(permits, Duration.ofMillis(wait));
            }
            case "acquire":
                l.acquire(Peer.number(cmd, "permits", 1));
                return null;
            case "release":
                l.release(Peer.number(cmd, "permits", 1));
                return null;
            case "availablePermits":
                return l.availablePermits();
            case "getConfig": {
                RateLimiterConfig c = l.getConfig();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("rateType", c.getRateType().name());
                m.put("rate", c.getRate());
                m.put("intervalMs", c.getRateInterval());
                return m;
            }
            case "expire":
                return l.expire(Duration.ofMillis(Peer.number(cmd, "ttlMs", 0)));
            case "delete":
                return l.delete();
            case "drain":
                return drain(l, Peer.number(cmd, "durationMs", 0), (int) Peer.number(cmd, "threads", 1));
            default:
                throw new IllegalArgumentException("unknown ratelimit op " + op);
        }
    }

    private static RateType type(Map<String, Object> cmd) {
        String t = Peer.string(cmd, "rateType");
        return t == null ? RateType.OVERALL : RateType.valueOf(t);
    }

    /** Takes single permits on threads threads for durationMs; returns how many were granted. */
    private static long drain(RRateLimiter l, long durationMs, int threads) throws InterruptedException {
        long end = System.currentTimeMillis() + durationMs;
        AtomicLong granted = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        List<Throwable> errs = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread th = new Thread(() -> {
                try {
                    for (long left = end - System.currentTimeMillis(); left > 0; left = end - System.currentTimeMillis()) {
                        if (l.tryAcquire(1, Duration.ofMillis(left))) {
                            granted.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    synchronized (errs) {
                        errs.add(e);
                    }
                }
            }, "peer-ratelimit-drain-" + i);
            th.setDaemon(true);
            th.start();
            ts.add(th);
        }
        for (Thread th : ts) {
            th.join();
        }
        if (!errs.isEmpty()) {
            throw new IllegalStateException("drain: " + errs.get(0), errs.get(0));
        }
        return granted.get();
    }
}
