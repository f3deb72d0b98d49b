package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// Thresholds of the checks.
const (
	// clockOK and clockWarn bound the skew this host sees (less half the
	// round trip it was read in): below clockOK it is ok, from clockWarn
	// on a warning.
	clockOK   = 100 * time.Millisecond
	clockWarn = time.Second
	// defaultBusyThreshold is Redis's busy-reply-threshold (lua-time-limit)
	// in milliseconds.
	defaultBusyThreshold = 5000
	// memoryFull is the share of maxmemory from which noeviction is about
	// to refuse writes.
	memoryFull = 0.9
	// clusterSlots is the number of hash slots of a Redis Cluster.
	clusterSlots = 16384
)

// finding returns a finding of check about n.
func (n *doctorNode) finding(check string, sev severity, summary string) doctorFinding {
	return doctorFinding{Check: check, Node: n.addr, Severity: sev, Summary: summary, Facts: map[string]any{}}
}

// skipped returns the finding of a check that could not run, and why.
func (n *doctorNode) skipped(check string, sev severity, why string) doctorFinding {
	f := n.finding(check, sev, "not checked: "+why)
	f.Skipped = []string{check + ": " + why}
	return f
}

// refusal describes err for a "not checked" line: the refused command and
// the server's words.
func refusal(cmd string, err error) string {
	if err == nil {
		return cmd + " did not show it"
	}
	if doctorNoPerm(err) {
		return cmd + " refused (NOPERM)"
	}
	return cmd + " failed (" + err.Error() + ")"
}

// checkNode judges one node: every check gives one finding (or, for the
// failover evidence, one when there is some).
func (d *doctor) checkNode(n *doctorNode) []doctorFinding {
	if n.connErr != nil {
		f := n.finding("connection", sevError, "cannot connect: "+n.connErr.Error())
		f.Meaning = "doctor could not check this node. If it is down, the locks whose names hash to its slots fail until it is back (or, for a replica, its master has one copy fewer)."
		f.Action = "Check that the node runs and that this host can reach the address the server announces (cluster-announce-ip, replica-announce-ip)."
		return []doctorFinding{f}
	}
	if n.mode() == "sentinel" {
		f := n.finding("server", sevWarn, "this is a Sentinel, not a server that holds locks")
		f.Meaning = "A Sentinel only watches the master and its replicas; locks live on them."
		f.Action = "Run doctor with --redis naming the master and each replica (SENTINEL MASTERS and SENTINEL REPLICAS <name> list them)."
		return []doctorFinding{f}
	}
	out := []doctorFinding{}
	if f, ok := n.checkAccess(); ok {
		out = append(out, f)
	}
	out = append(out, n.checkServer(), n.checkClients(), n.checkEviction(), d.checkReplication(n))
	if f, ok := n.checkFailover(); ok {
		out = append(out, f)
	}
	out = append(out, n.checkBusy(), n.checkPersistence(), n.checkClock(), d.checkACLFinding(n), n.checkPubSub())
	if n.clientCluster() {
		out = append(out, n.checkClusterNode())
	}
	return out
}

// checkAccess lists what the node refused doctor, if anything, and what
// doctor read instead. A failure other than a refusal is an error: the
// node stopped answering.
func (n *doctorNode) checkAccess() (doctorFinding, bool) {
	type q struct {
		cmd     string
		err     error
		instead string
	}
	asked := []q{
		{"INFO", n.infoErr, "server, memory, replication, persistence and clients not checked"},
		{"CONFIG GET", n.configErr, "read INFO instead; not checked: busy-reply-threshold, RDB save points, appendfsync, min-replicas-to-write"},
		{"CLUSTER INFO", n.clusterInfoErr, "cluster state not checked on this node"},
		{"CLUSTER NODES", n.clusterNodesErr, "the cluster's other nodes were not found from this one"},
		{"COMMAND INFO", n.commandsErr, "which pub/sub commands and WAIT exist is taken from the version"},
		{"TIME", n.timeErr, "clock skew not checked"},
		{"ACL WHOAMI", n.whoamiErr, "the user checked is the one --redis names"},
	}
	f := n.finding("access", sevInfo, "")
	var refused []string
	for _, a := range asked {
		if a.err == nil || (n.slotted && strings.HasPrefix(a.cmd, "CLUSTER ")) {
			continue // refused behind one address: the slotted finding says what it means
		}
		if !redisconn.IsErrorReply(a.err) {
			f.Severity = sevError
			f.Summary = "the node stopped answering: " + a.cmd + ": " + a.err.Error()
			f.Meaning = "doctor could not finish checking this node."
			f.Action = "Check the node and the network, then run doctor again."
			return f, true
		}
		refused = append(refused, a.cmd)
		f.Skipped = append(f.Skipped, a.cmd+": "+a.err.Error()+"; "+a.instead)
	}
	if len(refused) == 0 {
		return f, false
	}
	if n.infoErr != nil {
		f.Severity = sevWarn
	}
	f.Summary = "refused " + strings.Join(refused, ", ") + "; what they would show is checked another way or not at all (below)"
	f.Meaning = "The user doctor connects as may not run these commands. Each check says what it read instead, or that it could not check."
	f.Action = "Run doctor as a user that may (an admin's), for a full report; the applications' own user needs none of these."
	f.Facts["refused"] = refused
	return f, true
}

// checkServer reports the server, its version and uptime.
func (n *doctorNode) checkServer() doctorFinding {
	if n.info == nil || n.info["redis_version"] == "" {
		return n.skipped("server", sevInfo, refusal("INFO", n.infoErr))
	}
	name, version := n.server()
	mode := n.mode()
	up, _ := strconv.ParseInt(n.info["uptime_in_seconds"], 10, 64)
	f := n.finding("server", sevOK, fmt.Sprintf("%s %s, %s, up %s", name, version, mode, time.Duration(up)*time.Second))
	f.Facts["server"], f.Facts["version"], f.Facts["mode"], f.Facts["uptime_seconds"] = name, version, mode, up
	if limits := n.limits(); len(limits) > 0 {
		f.Severity = sevInfo
		f.Facts["limits"] = limits
		f.Meaning = "interlock is tested on Redis 6.0 and later and on Valkey 8 and 9. " + name + " " + version + " lacks some of what Redis 7 has: " + strings.Join(limits, "; ") + "."
		f.Action = "Nothing to do for the locks; upgrade to Redis 7 or Valkey for sharded pub/sub and doctor's permission check."
		if n.major() < 6 {
			f.Severity = sevWarn
			f.Action = "Upgrade to Redis 6.0 or later: interlock is not tested on older servers."
		}
	}
	if up < 600 {
		f.Severity = max(f.Severity, sevInfo)
		f.Meaning = strings.TrimSpace(f.Meaning + " The server started less than 10 minutes ago: locks held before a restart are gone unless persistence brought them back (see persistence).")
	}
	return f
}

// limits lists what the server's version lacks that interlock or doctor
// would use on Redis 7, and what happens instead; nil from 7.0 on, and
// when the version is unknown.
func (n *doctorNode) limits() []string {
	_, v := n.server()
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major >= 7 {
		return nil
	}
	out := []string{
		"no sharded pub/sub (SPUBLISH/SSUBSCRIBE, 7.0): PubSubAuto uses classic PUBLISH/SUBSCRIBE, as Redisson does, and PubSubSharded is refused (ErrInvalid)",
		"no redis.acl_check_cmd or ACL DRYRUN (7.0): doctor cannot check the ACL",
		"no ACL selectors or %R~/%W~ key permissions (7.0)",
	}
	if major < 6 || major == 6 && minor < 2 {
		out = append(out,
			"no ZMSCORE (6.2): after a failed release of several expirable permits interlock reads their leases with one ZSCORE each, in one pipeline",
			"no ACL channel permissions (6.2): every user may use every channel",
			"ACL SETUSER refuses what the server does not know: leave +spublish +ssubscribe +sunsubscribe +pubsub|shardnumsub +zmscore, resetchannels and the & rules out of the Minimal ACL, and add +client|setinfo, or rueidis's CLIENT SETINFO is logged as a denial on every connection")
	} else {
		out = append(out, "ACL SETUSER refuses commands the server does not know: leave +spublish +ssubscribe +sunsubscribe +pubsub|shardnumsub out of the Minimal ACL, and add +client|setinfo, or rueidis's CLIENT SETINFO is logged as a denial on every connection")
	}
	if major < 6 {
		out = append(out, "no ACL users (6.0)")
	}
	return out
}

// checkClients reports the connections, which CLIENT LIST details.
func (n *doctorNode) checkClients() doctorFinding {
	conns, err := strconv.ParseInt(n.info["connected_clients"], 10, 64)
	if n.info == nil || err != nil {
		return n.skipped("clients", sevInfo, refusal("INFO", n.infoErr))
	}
	blocked, _ := strconv.ParseInt(n.info["blocked_clients"], 10, 64)
	maxClients, _ := strconv.ParseInt(n.info["maxclients"], 10, 64)
	f := n.finding("clients", sevOK, fmt.Sprintf("%s connected, %d blocked", cli.Plural(int(conns), "client"), blocked))
	f.Facts["connected"], f.Facts["blocked"] = conns, blocked
	if maxClients > 0 {
		f.Facts["maxclients"] = maxClients
		f.Summary += fmt.Sprintf(", maxclients %d", maxClients)
		if float64(conns) >= memoryFull*float64(maxClients) {
			f.Severity = sevWarn
			f.Meaning = "The server is close to maxclients: new connections are refused beyond it, and lock calls of clients that need one fail."
			f.Action = "Look for leaked connections with CLIENT LIST (addr, age, idle), or raise maxclients."
		}
	}
	return f
}

// checkEviction judges maxmemory-policy: a policy that evicts can take
// lock keys before their TTL, silently.
func (n *doctorNode) checkEviction() doctorFinding {
	policy, ok := n.param("maxmemory-policy", "maxmemory_policy")
	if !ok {
		return n.skipped("maxmemory-policy", sevWarn, refusal("CONFIG GET", n.configErr)+" and "+refusal("INFO", n.infoErr))
	}
	maxStr, _ := n.param("maxmemory", "maxmemory")
	maxMem, _ := strconv.ParseInt(maxStr, 10, 64)
	used, _ := strconv.ParseInt(n.info["used_memory"], 10, 64)
	evicted, _ := strconv.ParseInt(n.info["evicted_keys"], 10, 64)
	oom := errorCount(n.info, "OOM")
	f := n.finding("maxmemory-policy", sevOK, policy)
	f.Facts["policy"], f.Facts["maxmemory"], f.Facts["used_memory"], f.Facts["evicted_keys"], f.Facts["oom_errors"] = policy, maxMem, used, evicted, oom
	if _, fromConfig := n.config["maxmemory-policy"]; !fromConfig {
		f.Facts["source"] = "INFO"
	}
	limit := "maxmemory " + strconv.FormatInt(maxMem, 10) + " bytes"
	if maxMem == 0 {
		limit = "maxmemory 0 (no limit)"
	}
	switch {
	case policy == "noeviction":
		f.Summary = "noeviction, " + limit + ": lock keys are never evicted"
		f.Meaning = "At maxmemory, writes fail with OOM errors instead: an acquisition or renewal that cannot be written fails, visibly, and no lock vanishes."
		var notes []string
		if maxMem > 0 && float64(used) >= memoryFull*float64(maxMem) {
			notes = append(notes, fmt.Sprintf("memory is %d%% full: writes, acquisitions and renewals among them, are refused at maxmemory.", used*100/maxMem))
		}
		if oom > 0 {
			notes = append(notes, fmt.Sprintf("the server refused %s for lack of memory since it started.", cli.Plural(int(oom), "command")))
		}
		if evicted > 0 {
			notes = append(notes, fmt.Sprintf("%s were evicted since the server started, so the policy was an evicting one for a while.", cli.Plural(int(evicted), "key")))
		}
		if len(notes) > 0 {
			f.Severity = sevWarn
			f.Meaning += " But " + strings.Join(notes, " And ")
			f.Action = "Give the server more memory, or move the data that fills it to another server."
		}
	case strings.HasPrefix(policy, "volatile-"), strings.HasPrefix(policy, "allkeys-"):
		f.Severity = sevHazard
		f.Summary = policy + ", " + limit + ": lock keys can be evicted before they expire"
		if strings.HasPrefix(policy, "volatile-") {
			f.Meaning = policy + " evicts keys that have a TTL, and every held lock has one (the watchdog's or a lease): locks are among the first keys it takes. "
		} else {
			f.Meaning = policy + " may evict any key: locks, fair-lock queues, fencing token counters, semaphore permits and latches. "
		}
		f.Meaning += "An evicted lock is free at once: another client acquires it while the holder still works, believing it holds it, and learns otherwise only at its next renewal. Nothing reports the eviction."
		if maxMem == 0 {
			f.Meaning += " maxmemory is 0 now, so nothing is evicted yet; the policy applies as soon as a limit is set (managed services set one)."
		}
		if evicted > 0 {
			f.Meaning += fmt.Sprintf(" %s were evicted since the server started.", cli.Plural(int(evicted), "key"))
		}
		f.Action = "Keep locks on a server of their own with maxmemory-policy noeviction (the default), so that memory pressure shows as failed writes rather than vanished locks: CONFIG SET maxmemory-policy noeviction, and the same in redis.conf. A cache that must evict belongs on another server."
	default:
		f.Severity = sevInfo
		f.Summary = policy + ", " + limit
		f.Meaning = "doctor does not know this policy; any policy other than noeviction may evict lock keys."
		f.Action = "Use noeviction on a server that holds locks."
	}
	return f
}

// checkReplication judges asynchronous replication. On a master it is
// a failover hazard unless the applications wait for replicas, which
// doctor cannot see (--wait-replicas says they do); on a replica it
// reports the link.
func (d *doctor) checkReplication(n *doctorNode) doctorFinding {
	switch n.info["role"] {
	case "master":
	case "slave":
		return n.checkReplicaLink()
	default:
		return n.skipped("replication", sevWarn, refusal("INFO", n.infoErr))
	}
	count, _ := strconv.Atoi(n.info["connected_slaves"])
	offset, _ := strconv.ParseInt(n.info["master_repl_offset"], 10, 64)
	f := n.finding("replication", sevOK, "no replicas")
	f.Facts["role"], f.Facts["connected_replicas"], f.Facts["master_repl_offset"] = "master", count, offset
	if count == 0 {
		f.Meaning = "Nothing can be promoted in this master's place, so no failover can lose a lock; a crash loses whatever persistence does not bring back."
		if n.isCluster() {
			f.Summary = "no replicas: if this master fails, the locks in its slots fail until it is back"
		}
		return f
	}
	type replica struct {
		Addr       string `json:"addr"`
		State      string `json:"state"`
		Offset     int64  `json:"offset"`
		LagBytes   int64  `json:"lag_bytes"`
		LagSeconds int64  `json:"lag_seconds"`
	}
	var reps []replica
	var parts []string
	maxLag := int64(0)
	for i := range count {
		m := parseInfoList(n.info["slave"+strconv.Itoa(i)])
		r := replica{Addr: m["ip"] + ":" + m["port"], State: m["state"]}
		r.Offset, _ = strconv.ParseInt(m["offset"], 10, 64)
		r.LagSeconds, _ = strconv.ParseInt(m["lag"], 10, 64)
		r.LagBytes = max(offset-r.Offset, 0)
		maxLag = max(maxLag, r.LagBytes)
		reps = append(reps, r)
		parts = append(parts, fmt.Sprintf("%s %s, %d bytes behind, last ack %ds ago", r.Addr, r.State, r.LagBytes, r.LagSeconds))
	}
	f.Facts["replicas"], f.Facts["max_lag_bytes"] = reps, maxLag
	f.Summary = fmt.Sprintf("%s under asynchronous replication, replication lag %d bytes (%s)", cli.Plural(count, "replica"), maxLag, strings.Join(parts, "; "))
	f.Meaning = "A lock is written to this master and reaches the replicas afterwards. If the master fails before a lock reached the replica that is promoted, the new master has no record of it and grants it to another client while the first still works: two holders. The lag is how far behind each replica is now (master_repl_offset minus its offset): what a failover at this moment would lose."
	if minRep, ok := n.param("min-replicas-to-write", ""); ok && minRep != "0" {
		maxLagCfg, _ := n.param("min-replicas-max-lag", "")
		f.Facts["min_replicas_to_write"] = minRep
		f.Meaning += " min-replicas-to-write " + minRep + " (lag at most " + maxLagCfg + "s) refuses writes when too few replicas are connected; it does not wait for them, so it does not close the window."
	}
	if n.commands != nil && !n.commands["wait"] {
		f.Meaning += " This server does not know WAIT: WithReplicaAcks and WithReplicaSync fail every acquisition here."
		f.Facts["wait_available"] = false
	}
	if !n.isCluster() {
		f.Meaning += " The replicas themselves were not checked: run doctor --redis on each."
	}
	f.Action = "Lock with interlock.WithReplicaAcks(n, timeout) (safe mode: an acquisition waits until n replicas have it, and fails otherwise) or interlock.WithReplicaSync(timeout) (Redisson's checkLockSyncedSlaves with slavesSyncTimeout, Redisson's default outside single-server setups). They narrow the window without closing it: protect the resource with a fenced lock's token where a second holder would do harm. doctor cannot see the applications' options; if they use either, run doctor with --wait-replicas."
	f.Severity = sevHazard
	if d.waitReplicas {
		f.Severity = sevWarn
		f.Summary += "; the applications wait for replicas (--wait-replicas)"
		f.Action = "Keep WithReplicaAcks or WithReplicaSync (Redisson: checkLockSyncedSlaves) on; protect the resource with a fenced lock's token where a second holder would do harm."
	}
	return f
}

// checkReplicaLink reports a replica's link to its master.
func (n *doctorNode) checkReplicaLink() doctorFinding {
	master := n.info["master_host"] + ":" + n.info["master_port"]
	link := n.info["master_link_status"]
	offset, _ := strconv.ParseInt(n.info["slave_repl_offset"], 10, 64)
	f := n.finding("replication", sevOK, "replica of "+master+", link "+link)
	f.Facts["role"], f.Facts["master"], f.Facts["link"], f.Facts["offset"] = "replica", master, link, offset
	f.Meaning = "Locks are taken on the master; this replica takes over if the master fails (see the master's replication finding)."
	if link != "up" {
		down, _ := strconv.ParseInt(n.info["master_link_down_since_seconds"], 10, 64)
		f.Severity = sevWarn
		f.Summary += fmt.Sprintf(" (down for %ds)", down)
		f.Meaning = "This replica does not receive the master's writes. Promoted now, it would lose every lock taken since the link went down."
		f.Action = "Find out why the link is down (the replica's log, the master's INFO replication)."
	}
	return f
}

// checkFailover reports evidence of a past failover: a master that took
// over another's replication history.
func (n *doctorNode) checkFailover() (doctorFinding, bool) {
	id2 := n.info["master_replid2"]
	if n.info["role"] != "master" || id2 == "" || strings.Trim(id2, "0") == "" {
		return doctorFinding{}, false
	}
	f := n.finding("failover", sevInfo, "this master was promoted from a replica at replication offset "+n.info["second_repl_offset"])
	f.Facts["master_replid2"], f.Facts["second_repl_offset"] = id2, n.info["second_repl_offset"]
	f.Meaning = "It took over the replication history of another master: a failover, REPLICAOF NO ONE, or a start from a replica's snapshot. Locks acquired on the old master that had not reached this node then were lost: if two holders were seen around that time, this is a likely cause."
	f.Action = "Nothing now; see the replication finding for how to narrow that window."
	return f, true
}

// checkBusy reports busy-reply-threshold (lua-time-limit): how long a
// script runs before the server answers BUSY to everyone else.
func (n *doctorNode) checkBusy() doctorFinding {
	v, ok := n.param("busy-reply-threshold", "")
	if !ok {
		v, ok = n.param("lua-time-limit", "")
	}
	busy := errorCount(n.info, "BUSY")
	if !ok {
		f := n.skipped("busy-reply-threshold", sevInfo, refusal("CONFIG GET", n.configErr)+"; INFO does not show it")
		if busy > 0 {
			f.Severity = sevWarn
			f.Summary += fmt.Sprintf("; but the server answered BUSY %d times since it started", busy)
		}
		return f
	}
	ms, _ := strconv.ParseInt(v, 10, 64)
	f := n.finding("busy-reply-threshold", sevOK, v+" ms")
	f.Facts["ms"], f.Facts["busy_errors"] = ms, busy
	f.Meaning = "A script or function that runs longer than this makes the server answer BUSY to every other command until it ends (SCRIPT KILL, or SHUTDOWN NOSAVE once it has written). Lock scripts are a few commands each and never come near it: BUSY comes from another script, and then every acquire, unlock and renewal fails; holders whose renewals fail for a whole lease lose their locks."
	switch {
	case ms > defaultBusyThreshold:
		f.Severity = sevWarn
		f.Summary += fmt.Sprintf(", above the default %d ms", defaultBusyThreshold)
		f.Action = "Keep it at 5000 (the default): a higher value lets a runaway script block every client longer before they even hear BUSY. Find long scripts with SLOWLOG GET and split them."
	case ms <= 0:
		f.Severity = sevInfo
		f.Summary += ": any long script makes the server answer BUSY at once"
		f.Action = "Keep it at 5000 (the default)."
	default:
		f.Summary += ": BUSY only after a script has run that long"
	}
	if busy > 0 {
		f.Severity = max(f.Severity, sevWarn)
		f.Summary += fmt.Sprintf("; the server answered BUSY %d times since it started", busy)
		f.Action = "Find the long script (SLOWLOG GET) and move its work out of the script; lock scripts must not share a server with long ones."
	}
	return f
}

// checkPersistence reports what survives a restart: with nothing, fencing
// tokens and semaphore permits restart with the server.
func (n *doctorNode) checkPersistence() doctorFinding {
	aof, aofOK := n.config["appendonly"]
	if !aofOK && n.info["aof_enabled"] != "" {
		aof, aofOK = map[string]string{"1": "yes", "0": "no"}[n.info["aof_enabled"]], true
	}
	save, saveOK := n.config["save"]
	if !aofOK {
		return n.skipped("persistence", sevInfo, refusal("CONFIG GET", n.configErr)+" and "+refusal("INFO", n.infoErr))
	}
	f := n.finding("persistence", sevOK, "")
	f.Facts["appendonly"] = aof
	if saveOK {
		f.Facts["save"] = save
	}
	rdb := "RDB snapshots (save " + save + ")"
	if save == "" {
		rdb = "no RDB snapshots (save \"\")"
	}
	switch {
	case aof == "yes":
		fsync := n.config["appendfsync"]
		f.Facts["appendfsync"] = fsync
		f.Summary = "AOF on, appendfsync " + fsync
		if !saveOK {
			f.Summary = "AOF on"
			f.Skipped = []string{"persistence: appendfsync: " + refusal("CONFIG GET", n.configErr)}
		} else {
			f.Summary += "; " + rdb
		}
		if fsync != "always" {
			f.Severity = sevInfo
			f.Meaning = "A crash loses the writes of the last second or so (what appendfsync has not flushed): a lock, fencing token or permit of that moment comes back as it was before."
			f.Action = "appendfsync always where a fencing token must never repeat after a crash; everysec is the usual trade-off."
		}
	case !saveOK:
		f.Severity = sevInfo
		f.Summary = "no AOF; RDB save points unknown"
		f.Skipped = []string{"persistence: RDB save points: " + refusal("CONFIG GET", n.configErr)}
		f.Facts["rdb_last_save_time"], f.Facts["rdb_changes_since_last_save"] = n.info["rdb_last_save_time"], n.info["rdb_changes_since_last_save"]
		f.Meaning = "Without the AOF, a restart keeps at most the last RDB snapshot, if there are save points; INFO shows " + n.info["rdb_changes_since_last_save"] + " changes since the last one."
		f.Action = "Check the save setting in redis.conf."
	case save != "":
		f.Severity = sevInfo
		f.Summary = "no AOF; " + rdb
		f.Meaning = "A restart brings back the last snapshot: locks, fencing token counters and semaphore permits as they were then. Writes since are lost: a fencing token handed out since may be handed out again, and permits taken or given back since are undone."
		f.Action = "Turn on the AOF (appendonly yes) where fencing tokens and permits must survive a crash exactly."
	default:
		f.Severity = sevWarn
		f.Summary = "persistence off: no AOF, " + rdb
		f.Meaning = "Nothing survives a restart. Every lock is released at once (holders learn it at their next renewal, while another client may already hold it); fencing token counters restart at 0, so new tokens are smaller than those a fenced resource has seen and it refuses the new holders; semaphore permits and latch counts vanish (a semaphore has no permits until set up again, a latch is open)."
		if c, _ := strconv.Atoi(n.info["connected_slaves"]); c > 0 {
			f.Meaning += " A master without persistence that restarts by itself comes back empty, and its replicas copy the empty data set."
		}
		f.Action = "Turn on the AOF (appendonly yes, appendfsync everysec or always) where tokens and permits must survive a restart; otherwise set semaphores up again after a restart (interlock semaphore init)."
	}
	return f
}

// checkClock compares the server's clock with this host's.
func (n *doctorNode) checkClock() doctorFinding {
	if n.timeErr != nil {
		return n.skipped("clock", sevInfo, refusal("TIME", n.timeErr))
	}
	abs := n.skew
	if abs < 0 {
		abs = -abs
	}
	bound := max(abs-n.rtt/2, 0) // the skew is at least this
	dir := "ahead of"
	if n.skew < 0 {
		dir = "behind"
	}
	f := n.finding("clock", sevOK, fmt.Sprintf("server clock %s %s this host's (±%s)", roundDur(abs), dir, roundDur(n.rtt/2)))
	f.Facts["skew_ms"], f.Facts["rtt_ms"] = float64(n.skew.Microseconds())/1000, float64(n.rtt.Microseconds())/1000
	f.Meaning = "Lock TTLs are counted by the server, so plain locks do not depend on the clients' clocks. Fair-lock waiter deadlines and expirable-semaphore leases are stamped with each client's clock, as Redisson does: a client whose clock runs ahead drops live waiters from the queue or ends leases early. The server's own clock matters too: Redis expires keys by wall-clock time, so a jump of it expires every lock at once."
	switch {
	case bound >= clockWarn:
		f.Severity = sevWarn
		f.Action = "Run NTP (chrony, systemd-timesyncd) on every client host and on the server host."
	case bound >= clockOK:
		f.Severity = sevInfo
		f.Action = "Check that NTP runs on this host and on the server's."
	}
	return f
}

// checkACLFinding reports which kinds the user may use.
func (d *doctor) checkACLFinding(n *doctorNode) doctorFinding {
	r := n.acl
	if n.major() > 0 && n.major() < 7 {
		// What the check tried (acl.lua's flags, ACL DRYRUN) is refused.
		f := n.skipped("acl", sevInfo, "user "+r.user+": "+errNoACLCheck.Error())
		f.Facts["user"] = r.user
		f.Action = "Check the user's rules against the Minimal ACL of docs/operations.md by hand (ACL GETUSER " + r.user + ")."
		return f
	}
	if r.err != nil {
		if noScripts(r.err) {
			f := n.finding("acl", sevWarn, "user "+r.user+" may not run scripts: no kind can work ("+r.err.Error()+")")
			f.Facts["user"] = r.user
			f.Meaning = "Every operation of every kind is a script sent with EVALSHA, or EVAL when the server does not have it cached: without both, every call fails with NOPERM."
			f.Action = "Grant the Minimal ACL of docs/operations.md: +evalsha +eval and the rest of its first line."
			return f
		}
		if strings.Contains(r.err.Error(), "User '") && strings.Contains(r.err.Error(), "not found") {
			f := n.finding("acl", sevWarn, "user "+r.user+" does not exist on this node")
			f.Facts["user"] = r.user
			f.Meaning = "Clients that log in as this user are refused here. On a cluster every node has its own users."
			f.Action = "Create the user on every node (ACL SETUSER, or an aclfile loaded by each node)."
			return f
		}
		return n.skipped("acl", sevInfo, "user "+r.user+": "+r.err.Error())
	}
	f := n.finding("acl", sevOK, "")
	f.Facts["user"], f.Facts["method"], f.Facts["name"] = r.user, r.method, d.name
	index := map[string]int{}
	for i, g := range r.groups {
		index[g.name] = i
	}
	type kindStatus struct {
		OK      bool     `json:"ok"`
		Missing []string `json:"missing,omitempty"` // the refused commands, as command lines
		Unknown bool     `json:"unknown,omitempty"` // some command is unknown to the server
	}
	kinds := map[string]kindStatus{}
	var okKinds, badKinds, details []string
	var optional []aclProbe
	for _, g := range r.groups {
		deps, isKind := aclKinds[g.name]
		if !isKind {
			_, opt, _ := r.groupStatus(index[g.name])
			optional = append(optional, opt...)
			continue
		}
		var st kindStatus
		var missing []aclProbe
		for _, name := range append(slices.Clone(deps), g.name) {
			denied, opt, unknown := r.groupStatus(index[name])
			missing = append(missing, denied...)
			st.Unknown = st.Unknown || unknown
			if name == g.name {
				optional = append(optional, opt...)
			}
		}
		for _, p := range missing {
			st.Missing = append(st.Missing, p.String())
		}
		st.OK = len(missing) == 0
		kinds[g.name] = st
		if st.OK {
			okKinds = append(okKinds, g.name)
		} else {
			badKinds = append(badKinds, g.name)
			details = append(details, g.name+": "+describeProbes(missing))
		}
	}
	f.Facts["kinds"] = kinds
	if len(optional) > 0 {
		var opt []string
		for _, p := range optional {
			opt = append(opt, p.String())
		}
		f.Facts["optional_refused"] = opt
	}
	f.Meaning = "Each kind needs the commands, keys and channels of the Minimal ACL in docs/operations.md; a refused one makes the operation fail at once with NOPERM (loudly, never silently). Checked for locks named " + strconv.Quote(d.name) + " (--name): give one of the applications' names to check their key patterns. On a cluster every node has its own ACL."
	if len(details) > 0 {
		f.Meaning += " Refused, by kind: " + strings.Join(details, ". ") + "."
	}
	if len(optional) > 0 {
		f.Meaning += " Refused, but needed only in some setups: " + describeOptional(optional) + "."
	}
	switch {
	case len(badKinds) == 0:
		f.Summary = "user " + r.user + " may use every kind"
	case len(okKinds) == 0:
		f.Severity = sevWarn
		f.Summary = "user " + r.user + " may use no kind"
		f.Action = "Grant the Minimal ACL of docs/operations.md (ACL SETUSER " + r.user + " ...), or check a name the user may use with --name."
	default:
		f.Severity = sevInfo
		f.Summary = "user " + r.user + " may use " + strings.Join(okKinds, ", ") + "; not " + strings.Join(badKinds, ", ")
		f.Action = "If the applications use the refused kinds, grant their lines of the Minimal ACL (docs/operations.md)."
	}
	return f
}

// noScripts reports whether err says scripts cannot be checked because
// EVAL itself is refused.
func noScripts(err error) bool {
	s := err.Error()
	return strings.Contains(s, "'evalsha' command") || strings.Contains(s, "'eval' command")
}

// checkPubSub reports the pub/sub waiters use, and whether the server
// has it.
func (n *doctorNode) checkPubSub() doctorFinding {
	sharded := n.shardedPubSub()
	f := n.finding("pubsub", sevOK, "")
	f.Facts["sharded"] = sharded
	if n.commands == nil {
		f.Skipped = []string{"pubsub: " + refusal("COMMAND INFO", n.commandsErr) + "; taken from the version"}
	}
	if n.commands != nil && (!n.commands["subscribe"] || !n.commands["publish"]) && (!n.clientCluster() || !sharded) {
		f.Severity = sevWarn
		f.Summary = "the server does not know SUBSCRIBE or PUBLISH: waiters poll"
		f.Meaning = "Releases cannot wake waiters: they find out by polling (at the holder's TTL, at most a second apart), so hand-offs take up to a second instead of a millisecond."
		f.Action = "Use a server with pub/sub (managed offerings sometimes disable it)."
		return f
	}
	switch {
	case n.slotted:
		f.Summary = "classic pub/sub (PUBLISH/SUBSCRIBE) through this one address, as interlock's PubSubAuto and Redisson use on a client that runs it as a single server"
		f.Meaning = "A proxy or managed endpoint must relay classic pub/sub for waiters to wake at a release; where it does not, they wake when the holder's TTL runs out (at most a second apart while polling). Forcing PubSubSharded through one address only works when its sharded messages reach this connection."
	case !n.isCluster():
		f.Summary = "classic pub/sub (PUBLISH/SUBSCRIBE), as interlock and Redisson use on a server that is no cluster"
		if sharded {
			f.Summary += "; sharded pub/sub available too"
		}
	case sharded:
		f.Summary = "sharded pub/sub (SPUBLISH/SSUBSCRIBE) available: interlock's PubSubAuto and Redisson 3.22+ use it on this cluster"
		f.Meaning = "Go and Java waiters must use the same mode: a Redisson older than 3.22 always PUBLISHes, which never reaches a sharded waiter (it then wakes only when the holder's TTL runs out)."
		f.Action = "With Java clients older than 3.22, lock with interlock.WithPubSubMode(interlock.PubSubClassic)."
	default:
		f.Severity = sevInfo
		f.Summary = "no sharded pub/sub (needs Redis 7 or Valkey): classic pub/sub, which every node broadcasts to the whole cluster"
		f.Meaning = "Release messages cost every node of the cluster some work; locks work."
	}
	return f
}

// checkClusterNode reports the node's own view of the cluster when it is
// not a healthy one; the deployment's finding has the details.
func (n *doctorNode) checkClusterNode() doctorFinding {
	if n.clusterInfo == nil {
		return n.skipped("cluster", sevInfo, refusal("CLUSTER INFO", n.clusterInfoErr))
	}
	state := n.clusterInfo["cluster_state"]
	f := n.finding("cluster", sevOK, "this node sees cluster_state "+state)
	f.Facts["cluster_state"] = state
	if state != "ok" {
		f.Severity = sevError
		f.Meaning = "This node refuses commands (CLUSTERDOWN): locks whose names hash to its slots fail."
		f.Action = "Check the cluster (CLUSTER NODES, the nodes' logs)."
	}
	for _, flag := range []string{"fail", "fail?"} {
		if slices.Contains(n.clusterFlags, flag) {
			f.Severity = max(f.Severity, sevWarn)
			f.Summary += "; the cluster flags this node " + flag
			f.Meaning = strings.TrimSpace(f.Meaning + " Other nodes think this node is failing: a failover of its slots may follow, which can lose locks (see replication).")
		}
	}
	return f
}

// checkCluster judges the whole cluster: its state and slot coverage, as
// the first node reached sees them, and its masters and replicas.
func checkCluster(seed *doctorNode, nodes []*doctorNode) doctorFinding {
	f := doctorFinding{Check: "cluster", Severity: sevOK, Facts: map[string]any{}}
	ci := seed.clusterInfo
	if ci == nil {
		f.Severity = sevWarn
		f.Summary = "not checked: " + refusal("CLUSTER INFO", seed.clusterInfoErr)
		f.Skipped = []string{"cluster: " + f.Summary}
		return f
	}
	num := func(k string) int { v, _ := strconv.Atoi(ci[k]); return v }
	assigned, okSlots, pfail, fail := num("cluster_slots_assigned"), num("cluster_slots_ok"), num("cluster_slots_pfail"), num("cluster_slots_fail")
	masters, replicas, noReplica := 0, 0, 0
	replicasOf := map[string]int{}
	for _, cn := range seed.clusterNodes {
		if cn.master != "-" {
			replicasOf[cn.master]++
		}
	}
	var failing []string
	for _, cn := range seed.clusterNodes {
		switch {
		case cn.has("master"):
			masters++
			if cn.slots > 0 && replicasOf[cn.id] == 0 {
				noReplica++
			}
		case cn.has("slave"):
			replicas++
		}
		if cn.has("fail") || cn.has("fail?") {
			failing = append(failing, cn.addr)
		}
	}
	f.Facts["cluster_state"], f.Facts["slots_assigned"], f.Facts["slots_ok"] = ci["cluster_state"], assigned, okSlots
	f.Facts["slots_pfail"], f.Facts["slots_fail"], f.Facts["known_nodes"] = pfail, fail, num("cluster_known_nodes")
	f.Facts["masters"], f.Facts["replicas"], f.Facts["masters_without_replica"] = masters, replicas, noReplica
	f.Summary = fmt.Sprintf("cluster_state %s; %d of %d slots assigned, %d ok; %s, %s", ci["cluster_state"], assigned, clusterSlots, okSlots,
		cli.Plural(masters, "master"), cli.Plural(replicas, "replica"))
	f.Meaning = "Every lock lives in the slot of its name; a slot without a working master fails its locks with CLUSTERDOWN."
	switch {
	case ci["cluster_state"] != "ok" || assigned < clusterSlots:
		f.Severity = sevError
		f.Meaning += fmt.Sprintf(" %d slots have no master, or the cluster is down: locks whose names hash to them fail now.", clusterSlots-okSlots)
		f.Action = "Assign every slot (redis-cli --cluster fix) and bring the failed masters back."
	case pfail > 0 || fail > 0 || len(failing) > 0:
		f.Severity = sevWarn
		f.Meaning += " Some nodes are suspected to fail (" + strings.Join(failing, ", ") + "): a failover may follow, and it can lose locks (see replication)."
		f.Action = "Check the failing nodes."
	}
	if len(failing) > 0 {
		f.Facts["failing_nodes"] = failing
	}
	if noReplica > 0 {
		f.Severity = max(f.Severity, sevInfo)
		verb := "have"
		if noReplica == 1 {
			verb = "has"
		}
		f.Meaning += fmt.Sprintf(" %s %s no replica: when one fails, its slots are down until it is back.", cli.Plural(noReplica, "master"), verb)
	}
	// Nodes that disagree with the seed about the state.
	var disagree []string
	for _, n := range nodes {
		if n.clusterInfo != nil && n.clusterInfo["cluster_state"] != ci["cluster_state"] {
			disagree = append(disagree, n.addr+" says "+n.clusterInfo["cluster_state"])
		}
	}
	if len(disagree) > 0 {
		f.Severity = max(f.Severity, sevWarn)
		f.Meaning += " The nodes disagree: " + strings.Join(disagree, ", ") + " (" + seed.addr + " says " + ci["cluster_state"] + ")."
	}
	return f
}

// checkSlotted explains a server that enforces cluster slots behind one
// address: cluster_enabled:1 in INFO while CLUSTER is refused, so clients
// run it as a standalone server.
func checkSlotted(seed *doctorNode) doctorFinding {
	f := doctorFinding{Check: "slots", Severity: sevInfo, Facts: map[string]any{}}
	f.Facts["cluster_enabled"] = true
	f.Facts["cluster_refused"] = seed.clusterInfoErr.Error()
	f.Summary = "hash slots enforced behind one address: INFO says cluster_enabled:1, CLUSTER is refused (" +
		seed.clusterInfoErr.Error() + "), so clients run it as a single server"
	f.Meaning = "A managed service's endpoint or a proxy in front of a cluster: it refuses, with CROSSSLOT, any command or script whose keys span hash slots. " +
		"interlock sends only single-slot commands: each lock's keys share its name's slot, and renewals and clean-up deletions are grouped by slot. " +
		"Your own multi-key commands (a fenced write to a key in another slot, MGET) must stay in one slot too."
	f.Action = "Nothing for interlock: connect to the address as to a single server, with the default pub/sub mode. docs/compatibility.md (managed services and proxies) says what each service allows."
	return f
}

// errorCount returns the count of an error prefix in INFO errorstats
// (errorstat_BUSY:count=3), 0 when absent.
func errorCount(info map[string]string, prefix string) int64 {
	n, _ := strconv.ParseInt(parseInfoList(info["errorstat_"+prefix])["count"], 10, 64)
	return n
}

// roundDur rounds d for display: to 1µs below a millisecond, to 0.1 ms
// below a second, to 1 ms above.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
