package interlock.peer;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.jar.Manifest;

import org.redisson.Redisson;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.MasterSlaveServersConfig;
import org.redisson.config.SentinelServersConfig;
import org.redisson.config.ShardedSubscriptionMode;

/**
 * The Java side of interlock's live interop tests: one RedissonClient, driven
 * by JSON lines.
 *
 * <pre>
 * java -jar interlock-peer-V.jar (--redis redis://HOST:PORT | --cluster HOST:PORT,HOST:PORT,...
 *     | --master HOST:PORT --replica HOST:PORT,...
 *     | --sentinel HOST:PORT,... --master-name NAME) [--watchdog-ms N]
 *     [--name-prefix P] [--sharded-subscription AUTO|ON|OFF]
 * </pre>
 *
 * --sentinel and --master-name give a Sentinel client: the sentinels'
 * addresses and the name under which they monitor the master.
 * --sharded-subscription sets a cluster client's shardedSubscriptionMode
 * (Redisson's default is AUTO: sharded pub/sub where the servers have it).
 *
 * On start it prints {"ready":true,"clientId":ID,"redisson":VERSION}. Then every
 * stdin line is a command
 * {"id":N,"thread":T,"op":OP,"kind":K,"name":NAME,"waitMs":W,"leaseMs":L}
 * and gets one stdout line back, {"id":N,"ok":true,"result":R,"threadId":J,"elapsedMs":E}
 * or {"id":N,"ok":false,"error":"Class: message","threadId":J,"elapsedMs":E}, where the
 * error goes on with "; caused by Class: message" for each cause.
 * Lock kinds are reentrant, fair, read, write and fenced, and nonReentrant and
 * nonReentrantFair (Redisson 4.4.0 and later; an older peer answers an error),
 * and spin (getSpinLock, with its default exponential backoff), and the
 * multi-locks multi and redLock over a comma-separated list of names (see
 * {@link Multi});
 * the kinds semaphore,
 * expirable and latch, with their extra fields "permits", "count", "ids" and
 * "ttlMs", are described in {@link Sync}.
 * Each logical thread T is one dedicated Java thread, created on first use, so
 * that ownership and reentrancy are those of a Java application; commands for
 * different threads run concurrently and their replies may come in any order.
 * The "parkedIn" command is answered at once, off the logical threads: its
 * result is where thread T is blocked (see {@link #parkedIn}), so that a test
 * can tell a lock() that is parked waiting for a release from one that is
 * still between round trips.
 * The "quit" command, and the end of stdin, shut the client down; the process
 * then exits 0. stdout carries nothing but protocol lines; logs go to stderr.
 */
public final class Peer {
    private static final PrintStream OUT =
            new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);

    final RedissonClient redisson;
    private final Map<Integer, ExecutorService> threads = new ConcurrentHashMap<>();
    // The Java thread behind each logical thread, for "parkedIn".
    private final Map<Integer, Thread> javaThreads = new ConcurrentHashMap<>();
    // One Java lock object per kind and name, shared by every thread, as an
    // application that keeps its RLock in a field does. (Redisson keeps the
    // lease of the last explicit-lease acquisition in the object, and uses
    // it on a partial unlock: see redisson-protocol.md §3.3.)
    private final Map<String, RLock> locks = new ConcurrentHashMap<>();

    private Peer(RedissonClient redisson) {
        this.redisson = redisson;
    }

    public static void main(String[] args) {
        // Before the first logger is created: slf4j-simple on stderr, at WARN.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        // Nothing but protocol lines may reach the real stdout.
        System.setOut(System.err);

        Config config;
        try {
            config = parseArgs(args);
        } catch (IllegalArgumentException e) {
            System.err.println("interlock-peer: " + e.getMessage());
            System.err.println("usage: java -jar interlock-peer.jar (--redis redis://HOST:PORT | "
                    + "--cluster HOST:PORT,... | --master HOST:PORT --replica HOST:PORT,... "
                    + "| --sentinel HOST:PORT,... --master-name NAME) [--watchdog-ms N] [--name-prefix P]"
                    + " [--sharded-subscription AUTO|ON|OFF]");
            System.exit(2);
            return;
        }
        RedissonClient redisson;
        try {
            redisson = Redisson.create(config);
        } catch (Throwable e) {
            System.err.println("interlock-peer: cannot start Redisson: " + e);
            e.printStackTrace(System.err);
            System.exit(1);
            return;
        }
        Peer peer = new Peer(redisson);
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("ready", true);
        ready.put("clientId", redisson.getId());
        ready.put("redisson", redissonVersion());
        write(ready);
        int status = peer.serve();
        peer.shutdown();
        System.exit(status);
    }

    private static Config parseArgs(String[] args) {
        String single = null;
        String cluster = null;
        String master = null;
        String replicas = null;
        String sentinels = null;
        String masterName = null;
        Long watchdog = null;
        String namePrefix = null;
        ShardedSubscriptionMode sharded = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value after " + a);
            }
            String v = args[++i];
            switch (a) {
                case "--redis":
                    single = v;
                    break;
                case "--cluster":
                    cluster = v;
                    break;
                case "--master":
                    master = v;
                    break;
                case "--replica":
                    replicas = v;
                    break;
                case "--sentinel":
                    sentinels = v;
                    break;
                case "--master-name":
                    masterName = v;
                    break;
                case "--name-prefix":
                    namePrefix = v;
                    break;
                case "--sharded-subscription":
                    try {
                        sharded = ShardedSubscriptionMode.valueOf(v);
                    } catch (IllegalArgumentException e) {
                        throw new IllegalArgumentException("bad --sharded-subscription " + v);
                    }
                    break;
                case "--watchdog-ms":
                    try {
                        watchdog = Long.parseLong(v);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("bad --watchdog-ms " + v);
                    }
                    break;
                default:
                    throw new IllegalArgumentException("unknown argument " + a);
            }
        }
        if ((single != null ? 1 : 0) + (cluster != null ? 1 : 0) + (master != null ? 1 : 0)
                + (sentinels != null ? 1 : 0) != 1) {
            throw new IllegalArgumentException("give exactly one of --redis, --cluster, --master and --sentinel");
        }
        if (sharded != null && cluster == null) {
            throw new IllegalArgumentException("--sharded-subscription needs --cluster");
        }
        if ((master == null) != (replicas == null)) {
            throw new IllegalArgumentException("--master and --replica go together");
        }
        if ((sentinels == null) != (masterName == null)) {
            throw new IllegalArgumentException("--sentinel and --master-name go together");
        }
        Config config = new Config();
        if (watchdog != null) {
            config.setLockWatchdogTimeout(watchdog);
        }
        if (single != null) {
            config.useSingleServer().setAddress(withScheme(single));
        } else if (master != null) {
            // Redisson's defaults otherwise: checkLockSyncedSlaves true, so
            // acquisitions and unlocks are followed by WAIT.
            MasterSlaveServersConfig ms = config.useMasterSlaveServers().setMasterAddress(withScheme(master));
            for (String addr : replicas.split(",")) {
                if (!addr.isBlank()) {
                    ms.addSlaveAddress(withScheme(addr.trim()));
                }
            }
        } else if (sentinels != null) {
            // Redisson's defaults otherwise: checkLockSyncedSlaves true, as
            // for --master, and readMode SLAVE (lock scripts are writes and
            // go to the master).
            SentinelServersConfig sc = config.useSentinelServers().setMasterName(masterName);
            for (String addr : sentinels.split(",")) {
                if (!addr.isBlank()) {
                    sc.addSentinelAddress(withScheme(addr.trim()));
                }
            }
        } else {
            // Redisson's defaults otherwise, shardedSubscriptionMode AUTO included.
            ClusterServersConfig cc = config.useClusterServers();
            for (String addr : cluster.split(",")) {
                if (!addr.isBlank()) {
                    cc.addNodeAddress(withScheme(addr.trim()));
                }
            }
            if (sharded != null) {
                cc.setShardedSubscriptionMode(sharded);
            }
        }
        if (namePrefix != null) {
            setNamePrefix(config, namePrefix);
        }
        return config;
    }

    /**
     * Maps every object name to prefix + name, and back by removing the
     * prefix: with Config.setNameMapper in Redisson 4, with the server
     * config's in 3.x, where NameMapper lives in another package.
     */
    private static void setNamePrefix(Config config, String prefix) {
        Class<?> iface = null;
        for (String n : new String[] {"org.redisson.config.NameMapper", "org.redisson.api.NameMapper"}) {
            try {
                iface = Class.forName(n);
                break;
            } catch (ClassNotFoundException e) {
                // the other version's package
            }
        }
        if (iface == null) {
            throw new IllegalArgumentException("--name-prefix: no NameMapper in Redisson " + redissonVersion());
        }
        Object mapper = Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, (self, m, a) -> {
            switch (m.getName()) {
                case "map":
                    return prefix + a[0];
                case "unmap":
                    String s = (String) a[0];
                    return s.startsWith(prefix) ? s.substring(prefix.length()) : s;
                case "equals":
                    return self == a[0];
                case "hashCode":
                    return System.identityHashCode(self);
                case "toString":
                    return "prefix name mapper " + prefix;
                default:
                    throw new UnsupportedOperationException(m.getName());
            }
        });
        Object target = config;
        Method set;
        try {
            set = Config.class.getMethod("setNameMapper", iface);
        } catch (NoSuchMethodException e) {
            target = config.isClusterConfig() ? config.useClusterServers()
                    : config.isSingleConfig() ? config.useSingleServer() : config.useMasterSlaveServers();
            try {
                set = target.getClass().getMethod("setNameMapper", iface);
            } catch (NoSuchMethodException e2) {
                throw new IllegalArgumentException("--name-prefix: no setNameMapper in Redisson " + redissonVersion());
            }
        }
        try {
            set.invoke(target, mapper);
        } catch (IllegalAccessException | InvocationTargetException e) {
            throw new IllegalStateException("setNameMapper", e);
        }
    }

    private static String withScheme(String addr) {
        return addr.contains("://") ? addr : "redis://" + addr;
    }

    /** The version of the Redisson on the class path, from its Maven metadata or our manifest. */
    static String redissonVersion() {
        try (InputStream in = Redisson.class.getResourceAsStream(
                "/META-INF/maven/org.redisson/redisson/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String v = p.getProperty("version");
                if (v != null) {
                    return v;
                }
            }
        } catch (Exception ignored) {
            // fall through to the manifest
        }
        try (InputStream in = Peer.class.getResourceAsStream("/META-INF/MANIFEST.MF")) {
            if (in != null) {
                String v = new Manifest(in).getMainAttributes().getValue("Redisson-Version");
                if (v != null) {
                    return v;
                }
            }
        } catch (Exception ignored) {
            // unknown
        }
        return "unknown";
    }

    /** Reads commands until "quit" or the end of stdin; returns the exit status. */
    private int serve() {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (true) {
            String line;
            try {
                line = in.readLine();
            } catch (Exception e) {
                System.err.println("interlock-peer: reading stdin: " + e);
                return 0;
            }
            if (line == null) {
                return 0; // EOF: the test is gone
            }
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> cmd;
            try {
                Object v = new Json(line).parse();
                if (!(v instanceof Map)) {
                    throw new IllegalArgumentException("a command must be a JSON object");
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) v;
                cmd = m;
            } catch (RuntimeException e) {
                writeError(null, e, null, 0);
                continue;
            }
            Object id = cmd.get("id");
            if ("quit".equals(cmd.get("op"))) {
                writeAtOnce(id, null);
                return 0;
            }
            int thread;
            try {
                thread = (int) number(cmd, "thread", 0);
            } catch (RuntimeException e) {
                writeError(id, e, null, 0);
                continue;
            }
            if ("parkedIn".equals(cmd.get("op"))) {
                // Answered here, not on the logical thread, which is the one
                // blocked.
                writeAtOnce(id, parkedIn(javaThreads.get(thread)));
                continue;
            }
            ExecutorService ex = threads.computeIfAbsent(thread, t -> Executors.newSingleThreadExecutor(r -> {
                Thread th = new Thread(r, "peer-thread-" + t);
                th.setDaemon(true); // a lock() blocked forever must not keep the JVM alive
                javaThreads.put(t, th);
                return th;
            }));
            ex.execute(() -> run(id, cmd));
        }
    }

    /** Writes the reply of a command answered on the reading thread. */
    private static void writeAtOnce(Object id, Object result) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("id", id);
        r.put("ok", true);
        r.put("result", result);
        r.put("threadId", Thread.currentThread().getId());
        r.put("elapsedMs", 0);
        write(r);
    }

    /**
     * Where th is blocked: "Class.method" of the innermost frame above the
     * JDK's parking machinery (for a Redisson lock() waiting for a release:
     * "java.util.concurrent.Semaphore.tryAcquire"), or null when th is not
     * waiting or does not exist.
     */
    static String parkedIn(Thread th) {
        if (th == null) {
            return null;
        }
        Thread.State st = th.getState();
        if (st != Thread.State.WAITING && st != Thread.State.TIMED_WAITING) {
            return null;
        }
        for (StackTraceElement f : th.getStackTrace()) {
            String c = f.getClassName();
            if (c.startsWith("java.util.concurrent.locks.") || c.startsWith("jdk.internal.misc.")
                    || c.startsWith("sun.misc.") || c.equals("java.lang.Object") || c.equals("java.lang.Thread")) {
                continue;
            }
            return c + "." + f.getMethodName();
        }
        return null;
    }

    /** Runs one command on the calling (dedicated) thread and writes its reply. */
    private void run(Object id, Map<String, Object> cmd) {
        long tid = Thread.currentThread().getId();
        long start = System.nanoTime();
        try {
            Object result = execute(cmd);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("id", id);
            r.put("ok", true);
            r.put("result", result);
            r.put("threadId", tid);
            r.put("elapsedMs", millisSince(start));
            write(r);
        } catch (Throwable e) {
            writeError(id, e, tid, millisSince(start));
        }
    }

    private static double millisSince(long start) {
        return Math.round((System.nanoTime() - start) / 1000.0) / 1000.0;
    }

    private Object execute(Map<String, Object> cmd) throws InterruptedException {
        String op = string(cmd, "op");
        if (op == null) {
            throw new IllegalArgumentException("missing op");
        }
        if (op.equals("threadId")) {
            return Thread.currentThread().getId();
        }
        switch (op) {
            case "bench":
                return Bench.run(this, cmd);
            case "holdMany":
                return Bench.holdMany(this, cmd);
            case "releaseMany":
                return Bench.releaseMany(this, cmd);
            default:
                break;
        }
        if (RateLimit.handles(string(cmd, "kind"))) {
            return RateLimit.execute(this, op, cmd);
        }
        if (Sync.handles(string(cmd, "kind"))) {
            return Sync.execute(this, op, cmd);
        }
        if (Election.handles(string(cmd, "kind"))) {
            return Election.execute(this, op, cmd);
        }
        long waitMs = number(cmd, "waitMs", 0);
        long leaseMs = number(cmd, "leaseMs", 0);
        long lease = leaseMs > 0 ? leaseMs : -1; // -1: watchdog
        RLock lock = lock(cmd);
        switch (op) {
            case "lock":
                if (leaseMs > 0) {
                    lock.lock(leaseMs, TimeUnit.MILLISECONDS);
                } else {
                    lock.lock();
                }
                return null;
            case "tryLock":
                return lock.tryLock(waitMs, lease, TimeUnit.MILLISECONDS);
            case "tryLockNoWait":
                return lock.tryLock();
            case "unlock":
                lock.unlock();
                return null;
            case "forceUnlock":
                return lock.forceUnlock();
            case "isLocked":
                return lock.isLocked();
            case "isHeldByThread":
                return lock.isHeldByCurrentThread();
            case "holdCount":
                return lock.getHoldCount();
            case "remainTimeToLive":
                return lock.remainTimeToLive();
            case "lockToken":
                return leaseMs > 0
                        ? fenced(lock, op).lockAndGetToken(leaseMs, TimeUnit.MILLISECONDS)
                        : fenced(lock, op).lockAndGetToken();
            case "tryLockToken":
                return fenced(lock, op).tryLockAndGetToken(waitMs, lease, TimeUnit.MILLISECONDS);
            case "getToken":
                return fenced(lock, op).getToken();
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    RLock lock(Map<String, Object> cmd) {
        String kind = string(cmd, "kind");
        String name = string(cmd, "name");
        if (kind == null || name == null || name.isEmpty()) {
            throw new IllegalArgumentException("kind and name are required");
        }
        if (Multi.handles(kind)) {
            return Multi.lock(this, kind, name);
        }
        switch (kind) {
            case "reentrant":
            case "fair":
            case "read":
            case "write":
            case "fenced":
            case "nonReentrant":
            case "nonReentrantFair":
            case "spin":
                break;
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
        return locks.computeIfAbsent(kind + "\u0000" + name, k -> {
            switch (kind) {
                case "reentrant":
                    return redisson.getLock(name);
                case "fair":
                    return redisson.getFairLock(name);
                case "read":
                    return redisson.getReadWriteLock(name).readLock();
                case "write":
                    return redisson.getReadWriteLock(name).writeLock();
                case "nonReentrant":
                    return nonReentrant(NON_REENTRANT_LOCK, "getNonReentrantLock", name);
                case "nonReentrantFair":
                    return nonReentrant(NON_REENTRANT_FAIR_LOCK, "getNonReentrantFairLock", name);
                case "spin":
                    return redisson.getSpinLock(name); // default exponential backoff
                default:
                    return redisson.getFencedLock(name);
            }
        });
    }

    /** RedissonClient.getNonReentrantLock(String), in Redisson 4.4.0 and later; null before. */
    private static final Method NON_REENTRANT_LOCK = clientMethod("getNonReentrantLock");
    /** RedissonClient.getNonReentrantFairLock(String), in Redisson 4.4.0 and later; null before. */
    private static final Method NON_REENTRANT_FAIR_LOCK = clientMethod("getNonReentrantFairLock");

    private static Method clientMethod(String name) {
        try {
            return RedissonClient.class.getMethod(name, String.class);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /**
     * Calls a RedissonClient factory that this Redisson version may lack (the
     * peer compiles against 3.52.0 too), or explains why it cannot.
     */
    private RLock nonReentrant(Method m, String what, String name) {
        if (m == null) {
            throw new UnsupportedOperationException(
                    what + " needs Redisson 4.4.0 or later; this peer runs " + redissonVersion());
        }
        try {
            return (RLock) m.invoke(redisson, name);
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

    private static RFencedLock fenced(RLock lock, String op) {
        if (!(lock instanceof RFencedLock)) {
            throw new IllegalArgumentException(op + " needs kind fenced");
        }
        return (RFencedLock) lock;
    }

    static String string(Map<String, Object> cmd, String key) {
        Object v = cmd.get(key);
        if (v == null) {
            return null;
        }
        if (!(v instanceof String)) {
            throw new IllegalArgumentException(key + " must be a string");
        }
        return (String) v;
    }

    static long number(Map<String, Object> cmd, String key, long dflt) {
        Object v = cmd.get(key);
        if (v == null) {
            return dflt;
        }
        if (!(v instanceof Number)) {
            throw new IllegalArgumentException(key + " must be a number");
        }
        return ((Number) v).longValue();
    }

    private void shutdown() {
        try {
            redisson.shutdown();
        } catch (Throwable e) {
            System.err.println("interlock-peer: shutdown: " + e);
        }
        for (ExecutorService ex : threads.values()) {
            ex.shutdownNow();
        }
        OUT.flush();
    }

    private static void writeError(Object id, Throwable e, Long threadId, double elapsedMs) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("id", id);
        r.put("ok", false);
        r.put("error", describe(e));
        r.put("threadId", threadId);
        r.put("elapsedMs", elapsedMs);
        write(r);
    }

    /**
     * "Class: message", then "; caused by Class: message" for each cause (the
     * sync API wraps, for example, the IllegalArgumentException of a failed
     * release in a RedisException).
     */
    private static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (int depth = 0; e != null && depth < 5; depth++) {
            if (depth > 0) {
                sb.append("; caused by ");
            }
            sb.append(e.getClass().getSimpleName());
            if (e.getMessage() != null) {
                sb.append(": ").append(e.getMessage());
            }
            Throwable c = e.getCause();
            e = c == e ? null : c;
        }
        return sb.toString();
    }

    private static void write(Map<String, Object> m) {
        StringBuilder sb = new StringBuilder();
        encode(sb, m);
        synchronized (OUT) {
            OUT.print(sb);
            OUT.print('\n');
            OUT.flush();
        }
    }

    private static void encode(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                encode(sb, String.valueOf(e.getKey()));
                sb.append(':');
                encode(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof List) {
            sb.append('[');
            boolean first = true;
            for (Object o : (List<?>) v) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                encode(sb, o);
            }
            sb.append(']');
        } else if (v instanceof Boolean || v instanceof Long || v instanceof Integer) {
            sb.append(v);
        } else if (v instanceof Double) {
            double d = (Double) v;
            if (d == Math.rint(d) && Math.abs(d) < 1e15) {
                sb.append((long) d);
            } else if (Double.isFinite(d)) {
                sb.append(d);
            } else {
                sb.append("null");
            }
        } else if (v instanceof Number) {
            sb.append(v);
        } else {
            String s = v.toString();
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"':
                        sb.append("\\\"");
                        break;
                    case '\\':
                        sb.append("\\\\");
                        break;
                    case '\n':
                        sb.append("\\n");
                        break;
                    case '\r':
                        sb.append("\\r");
                        break;
                    case '\t':
                        sb.append("\\t");
                        break;
                    default:
                        if (c < 0x20) {
                            sb.append(String.format("\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                }
            }
            sb.append('"');
        }
    }

    /**
     * A small JSON reader: objects become LinkedHashMaps, arrays ArrayLists,
     * integers Longs, other numbers Doubles. Errors are IllegalArgumentExceptions.
     */
    static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object parse() {
            Object v = value();
            skipSpace();
            if (i != s.length()) {
                throw error("trailing data");
            }
            return v;
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("bad JSON at offset " + i + ": " + what);
        }

        private void skipSpace() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private Object value() {
            skipSpace();
            if (i >= s.length()) {
                throw error("unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{':
                    return object();
                case '[':
                    return array();
                case '"':
                    return string();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return number();
                    }
                    throw error("unexpected '" + c + "'");
            }
        }

        private Object literal(String word, Object v) {
            if (!s.startsWith(word, i)) {
                throw error("expected " + word);
            }
            i += word.length();
            return v;
        }

        private Map<String, Object> object() {
            Map<String, Object> m = new LinkedHashMap<>();
            i++; // {
            skipSpace();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return m;
            }
            while (true) {
                skipSpace();
                if (i >= s.length() || s.charAt(i) != '"') {
                    throw error("expected a key");
                }
                String k = string();
                skipSpace();
                if (i >= s.length() || s.charAt(i) != ':') {
                    throw error("expected ':'");
                }
                i++;
                m.put(k, value());
                skipSpace();
                if (i >= s.length()) {
                    throw error("unexpected end");
                }
                char c = s.charAt(i++);
                if (c == '}') {
                    return m;
                }
                if (c != ',') {
                    throw error("expected ',' or '}'");
                }
            }
        }

        private List<Object> array() {
            List<Object> l = new ArrayList<>();
            i++; // [
            skipSpace();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return l;
            }
            while (true) {
                l.add(value());
                skipSpace();
                if (i >= s.length()) {
                    throw error("unexpected end");
                }
                char c = s.charAt(i++);
                if (c == ']') {
                    return l;
                }
                if (c != ',') {
                    throw error("expected ',' or ']'");
                }
            }
        }

        private String string() {
            StringBuilder sb = new StringBuilder();
            i++; // "
            while (true) {
                if (i >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return sb.toString();
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    throw error("unterminated escape");
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"':
                    case '\\':
                    case '/':
                        sb.append(e);
                        break;
                    case 'b':
                        sb.append('\b');
                        break;
                    case 'f':
                        sb.append('\f');
                        break;
                    case 'n':
                        sb.append('\n');
                        break;
                    case 'r':
                        sb.append('\r');
                        break;
                    case 't':
                        sb.append('\t');
                        break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw error("short \\u escape");
                        }
                        try {
                            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException ex) {
                            throw error("bad \\u escape");
                        }
                        i += 4;
                        break;
                    default:
                        throw error("bad escape \\" + e);
                }
            }
        }

        private Number number() {
            int start = i;
            if (s.charAt(i) == '-') {
                i++;
            }
            boolean integer = true;
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c >= '0' && c <= '9') {
                    i++;
                } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                    integer = false;
                    i++;
                } else {
                    break;
                }
            }
            String t = s.substring(start, i);
            try {
                if (integer) {
                    return Long.parseLong(t);
                }
                return Double.parseDouble(t);
            } catch (NumberFormatException ex) {
                throw error("bad number " + t);
            }
        }
    }
}
