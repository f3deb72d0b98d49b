package interlock.peer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.redisson.api.RFencedLock;
import org.redisson.api.RScript;
import org.redisson.client.codec.StringCodec;

/**
 * The peer's side of an election on a fenced lock, as a Java application
 * that elects its leader with RFencedLock does. A command with kind
 * "election" and op "term" runs one term on its logical thread:
 *
 * <pre>
 * term  {"name":N, "holdMs":H, "writeMs":W, "sha":S, "keys":[K...], "writer":ID}
 * </pre>
 *
 * It campaigns with getFencedLock(N).lockAndGetToken() (a watchdog hold),
 * then calls the loaded script S with KEYS K and ARGV (token, ID,
 * System.nanoTime()) every W ms until H ms have passed, the last call after
 * that (with no "sha", it only holds), and resigns with unlock(). The script is the test's fenced resource: it
 * answers 1 when it accepted the write, 0 when it refused a stale token.
 * The reply is {"token":T, "gotNs":G, "endNs":E, "accepted":A,
 * "rejected":R, "failed":F, "lost":L} (F: writes that got no answer): G and E are System.nanoTime() (CLOCK_MONOTONIC on
 * Linux, the clock the Go side reads) when the lock was acquired and when
 * the writes stopped; L is true when unlock found the lock no longer held
 * (it expired while the JVM was paused, and another candidate took it).
 * With the fields of {@link Oracle}, each tick also runs the reliability
 * suite's oracle.
 */
final class Election {
    /** RScript's integer return type: INTEGER in 3.x, LONG in 4.x. */
    private static final RScript.ReturnType LONG = longType();

    private Election() {
    }

    static boolean handles(String kind) {
        return "election".equals(kind);
    }

    static Object execute(Peer peer, String op, Map<String, Object> cmd) throws InterruptedException {
        String name = Peer.string(cmd, "name");
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("name is required");
        }
        if (!"term".equals(op)) {
            throw new IllegalArgumentException("election has no op " + op);
        }
        return term(peer, name, cmd);
    }

    private static Object term(Peer peer, String name, Map<String, Object> cmd) throws InterruptedException {
        long holdMs = Peer.number(cmd, "holdMs", 0);
        long writeMs = Math.max(1, Peer.number(cmd, "writeMs", 50));
        String sha = Peer.string(cmd, "sha");
        String writer = Peer.string(cmd, "writer");
        List<Object> keys = strings(cmd, "keys");
        Oracle oracle = Oracle.of(cmd, writer == null ? "" : writer);
        RFencedLock lock = peer.redisson.getFencedLock(name);
        Long token = lock.lockAndGetToken();
        long got = System.nanoTime();
        long until = got + holdMs * 1_000_000L;
        long accepted = 0;
        long rejected = 0;
        long failed = 0;
        RScript script = peer.redisson.getScript(StringCodec.INSTANCE);
        if (oracle != null) {
            oracle.enter(script, token);
        }
        long end;
        boolean lost = false;
        try {
            while (true) {
                if (sha != null) {
                    try {
                        Long ok = script.evalSha(RScript.Mode.READ_WRITE, sha, LONG, keys,
                                String.valueOf(token), writer == null ? "" : writer, String.valueOf(System.nanoTime()));
                        if (ok != null && ok == 1L) {
                            accepted++;
                        } else {
                            rejected++;
                        }
                    } catch (RuntimeException e) {
                        failed++; // a timeout after a pause, say: the term goes on
                    }
                }
                if (oracle != null) {
                    try {
                        oracle.readModifyWrite(script, token);
                    } catch (RuntimeException e) {
                        failed++;
                    }
                }
                // Checked after the write: a leader resumed after a pause
                // finishes the write it was about to make, as a real one
                // would.
                if (System.nanoTime() >= until) {
                    break;
                }
                Thread.sleep(writeMs);
            }
        } finally {
            end = System.nanoTime();
            try {
                lock.unlock();
            } catch (IllegalMonitorStateException e) {
                lost = true;
            }
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("token", token);
        r.put("gotNs", got);
        r.put("endNs", end);
        r.put("accepted", accepted);
        r.put("rejected", rejected);
        r.put("failed", failed);
        r.put("lost", lost);
        return r;
    }

    /**
     * The reliability suite's oracle (reliability/oracle_test.go), run by
     * the SHA1s of its scripts: "oEnter", "oRead", "oWrite", with KEYS
     * "oKeys" and the resource "oRes". A term enters a section named
     * writer:token, then does a read-modify-write of the resource's counter
     * at each tick until a write is refused for a stale token; it never
     * exits (the checker ends such a section at its last accepted write).
     */
    private static final class Oracle {
        final String enter;
        final String read;
        final String write;
        final List<Object> keys;
        final String res;
        final String writer;
        boolean in;

        private Oracle(Map<String, Object> cmd, String writer) {
            this.enter = Peer.string(cmd, "oEnter");
            this.read = Peer.string(cmd, "oRead");
            this.write = Peer.string(cmd, "oWrite");
            this.keys = strings(cmd, "oKeys");
            this.res = Peer.string(cmd, "oRes");
            this.writer = writer;
        }

        static Oracle of(Map<String, Object> cmd, String writer) {
            return cmd.get("oEnter") == null ? null : new Oracle(cmd, writer);
        }

        private Object call(RScript script, String sha, Long token, String value) {
            return script.evalSha(RScript.Mode.READ_WRITE, sha, LONG, keys, res, writer, writer + ":" + token,
                    String.valueOf(token), "1", String.valueOf(System.nanoTime()), value);
        }

        void enter(RScript script, Long token) {
            Object ok = call(script, enter, token, "");
            in = ok instanceof Long && (Long) ok == 1L;
        }

        void readModifyWrite(RScript script, Long token) {
            if (!in) {
                return;
            }
            Object c = call(script, read, token, "");
            long v = c instanceof Long ? (Long) c : 0;
            Object ok = call(script, write, token, String.valueOf(v + 1));
            if (!(ok instanceof Long && (Long) ok == 1L)) {
                in = false; // fenced out
            }
        }
    }

    private static List<Object> strings(Map<String, Object> cmd, String key) {
        List<Object> out = new ArrayList<>();
        Object v = cmd.get(key);
        if (v == null) {
            return out;
        }
        if (!(v instanceof List)) {
            throw new IllegalArgumentException(key + " must be an array of strings");
        }
        for (Object o : (List<?>) v) {
            if (!(o instanceof String)) {
                throw new IllegalArgumentException(key + " must be an array of strings");
            }
            out.add(o);
        }
        return out;
    }

    private static RScript.ReturnType longType() {
        try {
            return RScript.ReturnType.valueOf("LONG");
        } catch (IllegalArgumentException e) {
            return RScript.ReturnType.valueOf("INTEGER");
        }
    }
}
