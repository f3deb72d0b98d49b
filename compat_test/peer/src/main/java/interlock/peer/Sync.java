package interlock.peer;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RCountDownLatch;
import org.redisson.api.RExpirable;
import org.redisson.api.RObject;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;

/**
 * The peer's semaphore and latch ops. A command's "kind" picks the object:
 *
 * <pre>
 * semaphore  RSemaphore                 trySetPermits, addPermits, acquire, tryAcquire, release,
 *                                       releaseIfExists, availablePermits, drainPermits
 * expirable  RPermitExpirableSemaphore  trySetPermits, setPermits, addPermits, acquire, tryAcquire,
 *                                       release, releaseOne, tryRelease, tryReleaseOne,
 *                                       updateLeaseTime, getLeaseTime, availablePermits,
 *                                       getPermits, acquiredPermits
 * latch      RCountDownLatch            trySetCount, countDown, getCount, await
 * all three                             delete
 * both semaphores                       remainTimeToLive
 * </pre>
 *
 * Arguments: "permits" (int, used as given, 0 included), "count" (long),
 * "ids" (permit ids as hex strings), "ttlMs" (trySetPermits of a semaphore: its
 * presence selects trySetPermits(p, ttl)), "waitMs" and "leaseMs". A waitMs of
 * -1 selects the no-wait tryAcquire(p) and the untimed await(). For
 * expirable permits a leaseMs of -1 or 0 means no lease (Redisson's
 * lease-less forms; its own lease 0 would make a permit that has already
 * expired); any other value is passed to Redisson as is. Multi-permit
 * acquires reply with a list of hex ids, empty when nothing was acquired.
 */
final class Sync {
    /** RSemaphore.releaseIfExists(int), which Redisson has since 4.1.0; null before that. */
    private static final Method RELEASE_IF_EXISTS = findReleaseIfExists();

    private Sync() {
    }

    static boolean handles(String kind) {
        return "semaphore".equals(kind) || "expirable".equals(kind) || "latch".equals(kind);
    }

    static Object execute(Peer peer, String op, Map<String, Object> cmd) throws InterruptedException {
        String kind = Peer.string(cmd, "kind");
        String name = Peer.string(cmd, "name");
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("name is required");
        }
        switch (kind) {
            case "semaphore":
                return semaphore(peer.redisson.getSemaphore(name), op, cmd);
            case "expirable":
                return expirable(peer.redisson.getPermitExpirableSemaphore(name), op, cmd);
            default:
                return latch(peer.redisson.getCountDownLatch(name), op, cmd);
        }
    }

    private static Object semaphore(RSemaphore s, String op, Map<String, Object> cmd)
            throws InterruptedException {
        switch (op) {
            case "trySetPermits":
                if (cmd.get("ttlMs") != null) {
                    return s.trySetPermits(permits(cmd), Duration.ofMillis(Peer.number(cmd, "ttlMs", 0)));
                }
                return s.trySetPermits(permits(cmd));
            case "addPermits":
                s.addPermits(permits(cmd));
                return null;
            case "acquire":
                s.acquire(permits(cmd));
                return null;
            case "tryAcquire": {
                long wait = Peer.number(cmd, "waitMs", 0);
                if (wait == -1) {
                    return s.tryAcquire(permits(cmd));
                }
                return s.tryAcquire(permits(cmd), wait, TimeUnit.MILLISECONDS);
            }
            case "release":
                s.release(permits(cmd));
                return null;
            case "releaseIfExists":
                return releaseIfExists(s, permits(cmd));
            case "availablePermits":
                return s.availablePermits();
            case "drainPermits":
                return s.drainPermits();
            default:
                return common(s, op, "semaphore");
        }
    }

    private static Object expirable(RPermitExpirableSemaphore s, String op, Map<String, Object> cmd)
            throws InterruptedException {
        switch (op) {
            case "trySetPermits":
                return s.trySetPermits(permits(cmd));
            case "setPermits":
                s.setPermits(permits(cmd));
                return null;
            case "addPermits":
                s.addPermits(permits(cmd));
                return null;
            case "acquire": {
                long lease = lease(cmd);
                return lease == -1 ? s.acquire(permits(cmd)) : s.acquire(permits(cmd), lease, TimeUnit.MILLISECONDS);
            }
            case "tryAcquire": {
                long wait = Peer.number(cmd, "waitMs", 0);
                long lease = lease(cmd);
                if (wait == -1) {
                    if (lease != -1) {
                        throw new IllegalArgumentException("the no-wait tryAcquire(permits) takes no lease");
                    }
                    return s.tryAcquire(permits(cmd));
                }
                return s.tryAcquire(permits(cmd), wait, lease, TimeUnit.MILLISECONDS);
            }
            case "release":
                s.release(ids(cmd));
                return null;
            case "releaseOne":
                s.release(oneId(cmd, op));
                return null;
            case "tryRelease":
                return s.tryRelease(ids(cmd));
            case "tryReleaseOne":
                return s.tryRelease(oneId(cmd, op));
            case "updateLeaseTime":
                return s.updateLeaseTime(oneId(cmd, op), lease(cmd), TimeUnit.MILLISECONDS);
            case "getLeaseTime":
                return s.getLeaseTime(oneId(cmd, op));
            case "availablePermits":
                return s.availablePermits();
            case "getPermits":
                return s.getPermits();
            case "acquiredPermits":
                return s.acquiredPermits();
            default:
                return common(s, op, "expirable");
        }
    }

    private static Object latch(RCountDownLatch l, String op, Map<String, Object> cmd)
            throws InterruptedException {
        switch (op) {
            case "trySetCount":
                return l.trySetCount(Peer.number(cmd, "count", 0));
            case "countDown":
                l.countDown();
                return null;
            case "getCount":
                return l.getCount();
            case "await": {
                long wait = Peer.number(cmd, "waitMs", 0);
                if (wait == -1) {
                    l.await();
                    return null;
                }
                return l.await(wait, TimeUnit.MILLISECONDS);
            }
            default:
                return common(l, op, "latch");
        }
    }

    private static Object common(RObject o, String op, String kind) {
        if (op.equals("delete")) {
            return o.delete();
        }
        if (op.equals("remainTimeToLive") && o instanceof RExpirable) {
            return ((RExpirable) o).remainTimeToLive();
        }
        throw new IllegalArgumentException("unknown op " + op + " for kind " + kind);
    }

    private static Method findReleaseIfExists() {
        try {
            return RSemaphore.class.getMethod("releaseIfExists", int.class);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    private static Object releaseIfExists(RSemaphore s, int permits) {
        if (RELEASE_IF_EXISTS == null) {
            throw new UnsupportedOperationException(
                    "releaseIfExists needs Redisson 4.1.0 or later; this peer runs " + Peer.redissonVersion());
        }
        try {
            return RELEASE_IF_EXISTS.invoke(s, permits);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        } catch (InvocationTargetException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException) {
                throw (RuntimeException) c;
            }
            if (c instanceof Error) {
                throw (Error) c;
            }
            throw new IllegalStateException(c);
        }
    }

    private static int permits(Map<String, Object> cmd) {
        long p = Peer.number(cmd, "permits", 0);
        if (p < Integer.MIN_VALUE || p > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("permits out of int range: " + p);
        }
        return (int) p;
    }

    /** The expirable lease in ms: -1 (no lease) for -1 and 0, else as given. */
    private static long lease(Map<String, Object> cmd) {
        long l = Peer.number(cmd, "leaseMs", 0);
        return l == 0 ? -1 : l;
    }

    private static List<String> ids(Map<String, Object> cmd) {
        Object v = cmd.get("ids");
        if (v == null) {
            return new ArrayList<>();
        }
        if (!(v instanceof List)) {
            throw new IllegalArgumentException("ids must be an array of strings");
        }
        List<String> out = new ArrayList<>();
        for (Object o : (List<?>) v) {
            if (!(o instanceof String)) {
                throw new IllegalArgumentException("ids must be an array of strings");
            }
            out.add((String) o);
        }
        return out;
    }

    private static String oneId(Map<String, Object> cmd, String op) {
        List<String> ids = ids(cmd);
        if (ids.size() != 1) {
            throw new IllegalArgumentException(op + " takes exactly one id, got " + ids.size());
        }
        return ids.get(0);
    }
}
