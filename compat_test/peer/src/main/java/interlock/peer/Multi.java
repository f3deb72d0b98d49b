package interlock.peer;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.redisson.api.RLock;

/**
 * The multi-lock kinds of the peer: RedissonMultiLock (kind "multi") and
 * RedissonRedLock (kind "redLock") over members named in "name", a
 * comma-separated list taken in the order given (Redisson does not sort).
 * Members are RLocks (getLock); "multi:K1,K2,..." and "redLock:K1,K2,..."
 * give member i the lock kind Ki instead (fair, write, fenced, ...: any
 * kind of {@link Peer#lock}), one per name. The members are the peer's
 * shared lock objects of those kinds and names, and the multi-lock is one
 * object per kind and name, like every other lock of the peer.
 *
 * The lock ops then act on the multi-lock as an RLock: lock, tryLock,
 * tryLockNoWait, unlock and isHeldByThread; the others answer Redisson's
 * UnsupportedOperationException.
 */
final class Multi {
    private static final Map<String, RLock> LOCKS = new ConcurrentHashMap<>();

    private Multi() {
    }

    static boolean handles(String kind) {
        return kind != null && base(kind) != null;
    }

    /** "multi" or "redLock" for a multi-lock kind, else null. */
    private static String base(String kind) {
        String b = kind.contains(":") ? kind.substring(0, kind.indexOf(':')) : kind;
        return b.equals("multi") || b.equals("redLock") ? b : null;
    }

    static RLock lock(Peer peer, String kind, String name) {
        String key = kind + "\u0000" + name;
        RLock cached = LOCKS.get(key);
        if (cached != null) {
            return cached;
        }
        String[] names = name.split(",", -1);
        String[] kinds = new String[names.length];
        if (kind.contains(":")) {
            String[] ks = kind.substring(kind.indexOf(':') + 1).split(",", -1);
            if (ks.length != names.length) {
                throw new IllegalArgumentException(
                        kind + ": " + ks.length + " member kinds for " + names.length + " names");
            }
            kinds = ks;
        } else {
            Arrays.fill(kinds, "reentrant");
        }
        RLock[] members = new RLock[names.length];
        for (int i = 0; i < names.length; i++) {
            if (names[i].isEmpty() || handles(kinds[i])) {
                throw new IllegalArgumentException(kind + ": member " + i + " (" + kinds[i] + " " + names[i]
                        + ") must be a non-empty name of a single lock kind");
            }
            Map<String, Object> cmd = new HashMap<>();
            cmd.put("kind", kinds[i]);
            cmd.put("name", names[i]);
            members[i] = peer.lock(cmd);
        }
        RLock m = base(kind).equals("multi") ? peer.redisson.getMultiLock(members) : redLock(peer, members);
        RLock prev = LOCKS.putIfAbsent(key, m);
        return prev != null ? prev : m;
    }

    @SuppressWarnings("deprecation") // deprecated in Redisson, and what the Go RedLock interoperates with
    private static RLock redLock(Peer peer, RLock[] members) {
        return peer.redisson.getRedLock(members);
    }
}
