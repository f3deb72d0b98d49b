// Package doctor is "interlock doctor": it checks a live Redis, node by
// node on a cluster, for the settings that silently break locks, and
// explains each finding: what it means for locks and what to do.
package doctor

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/keys"
)

// severity ranks a finding of doctor.
type severity int

// Severities, from harmless to worst. The exit status is the worst
// finding's (doctorExitCode).
const (
	sevOK     severity = iota // checked, nothing to do
	sevInfo                   // worth knowing; nothing is wrong for locks
	sevWarn                   // locks work, but some failures or surprises are likely
	sevHazard                 // can silently break mutual exclusion
	sevError                  // cannot serve locks now, or could not be checked
)

var severityNames = [...]string{"ok", "info", "warn", "hazard", "error"}

// String returns the severity's name: ok, info, warn, hazard or error.
func (s severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// MarshalText returns the name.
func (s severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a name.
func (s *severity) UnmarshalText(b []byte) error {
	i := slices.Index(severityNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("unknown severity %q", b)
	}
	*s = severity(i)
	return nil
}

// doctorExitCode maps the worst finding to the exit status.
func doctorExitCode(worst severity) int {
	switch worst {
	case sevOK, sevInfo:
		return exit.OK
	case sevWarn:
		return exit.Failure
	case sevHazard:
		return exit.Hazard
	}
	return exit.Unavailable
}

// doctorFinding is one thing doctor found. Its JSON form is part of
// doctor's interface: fields are only ever added.
type doctorFinding struct {
	Check    string         `json:"check"`
	Node     string         `json:"node,omitempty"` // "" for the whole deployment
	Severity severity       `json:"severity"`
	Summary  string         `json:"summary"`
	Meaning  string         `json:"meaning,omitempty"` // what it means for locks
	Action   string         `json:"action,omitempty"`  // what to do
	Skipped  []string       `json:"skipped,omitempty"` // what could not be checked, and why
	Facts    map[string]any `json:"facts,omitempty"`
}

// doctorNodeInfo describes one node checked.
type doctorNodeInfo struct {
	Addr      string `json:"addr"`
	Role      string `json:"role,omitempty"`   // master or replica
	Master    string `json:"master,omitempty"` // a replica's master
	Server    string `json:"server,omitempty"` // redis or valkey
	Version   string `json:"version,omitempty"`
	Reachable bool   `json:"reachable"`
}

// doctorReport is what doctor prints, as text or JSON.
type doctorReport struct {
	Deployment string           `json:"deployment"` // standalone, cluster, slotted (slots enforced behind one address), sentinel, or nodes (several standalone servers)
	Name       string           `json:"name"`       // the lock name the ACL check used
	Nodes      []doctorNodeInfo `json:"nodes"`
	Findings   []doctorFinding  `json:"findings"`
	Worst      severity         `json:"worst"`
	ExitStatus int              `json:"exit_status"`
}

// doctorDefaultName is the lock name the ACL check uses without --name.
const doctorDefaultName = "interlock:doctor"

// doctor checks a deployment for what breaks locks.
type doctor struct {
	opt          rueidis.ClientOption
	name         string // lock name for the ACL check
	aclUser      string // user to check, "" for the connected one
	waitReplicas bool   // the applications wait for replicas
}

// Command is "interlock doctor": check a live server, node by node on a
// cluster, for the settings that break locks, and explain each finding.
var Command = cli.Command{Name: "doctor", Usage: usage, Run: run}

// run is Command's Run.
func run(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet("doctor", usage)
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	asJSON := fs.Bool("json", false, "print JSON")
	name := fs.String("name", doctorDefaultName, "lock name for the ACL check")
	aclUser := fs.String("acl-user", "", "ACL user to check")
	waitReplicas := fs.Bool("wait-replicas", false, "the applications wait for replicas")
	rest, err := fs.ParseArgs(io, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cli.Usagef("doctor", "unexpected argument %q", rest[0])
	}
	if err := keys.Check(*name); err != nil {
		return cli.Usagef("doctor", "--name: %v", err)
	}
	opt, err := redisconn.Options(redis.URLs)
	if err != nil {
		return exit.WithCode(exit.Usage, err)
	}
	d := &doctor{opt: opt, name: *name, aclUser: *aclUser, waitReplicas: *waitReplicas}
	rep, err := d.run(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeDoctorText(io.Out, rep)
	}
	if err != nil {
		return exit.WithCode(exit.Failure, err)
	}
	return exit.Status(rep.ExitStatus)
}

// run finds the nodes, checks each and judges the whole. It fails only
// when no address of --redis answers.
func (d *doctor) run(ctx context.Context) (*doctorReport, error) {
	var seed *doctorNode
	tried := map[string]*doctorNode{}
	for _, addr := range d.opt.InitAddress {
		n := d.probe(ctx, addr)
		tried[addr] = n
		if n.connErr == nil {
			seed = n
			break
		}
	}
	if seed == nil {
		first := tried[d.opt.InitAddress[0]]
		return nil, redisconn.ConnectFailed(d.opt.InitAddress, first.connErr)
	}
	rep := &doctorReport{Deployment: "standalone", Name: d.name}
	switch {
	case seed.slotted:
		rep.Deployment = "slotted"
	case seed.isCluster():
		rep.Deployment = "cluster"
	case seed.mode() == "sentinel":
		rep.Deployment = "sentinel"
	case len(d.opt.InitAddress) > 1:
		rep.Deployment = "nodes"
	}
	var nodes []*doctorNode
	if seed.clientCluster() && seed.clusterNodes != nil {
		nodes = d.probeCluster(ctx, seed)
	} else {
		// Not a cluster, or CLUSTER NODES refused: the nodes --redis names.
		nodes = []*doctorNode{seed}
		var rest []string
		for _, addr := range d.opt.InitAddress {
			if n, ok := tried[addr]; ok && n != seed {
				nodes = append(nodes, n)
			} else if !ok {
				rest = append(rest, addr)
			}
		}
		nodes = append(nodes, d.probeAll(ctx, rest)...)
	}
	switch rep.Deployment {
	case "cluster":
		rep.Findings = append(rep.Findings, checkCluster(seed, nodes))
	case "slotted":
		rep.Findings = append(rep.Findings, checkSlotted(seed))
	}
	for _, n := range nodes {
		info := doctorNodeInfo{Addr: n.addr, Role: n.role(), Master: n.clusterMaster, Reachable: n.connErr == nil}
		if info.Master == "" && n.info["role"] == "slave" {
			info.Master = n.info["master_host"] + ":" + n.info["master_port"]
		}
		info.Server, info.Version = n.server()
		rep.Nodes = append(rep.Nodes, info)
		rep.Findings = append(rep.Findings, d.checkNode(n)...)
	}
	for _, f := range rep.Findings {
		rep.Worst = max(rep.Worst, f.Severity)
	}
	rep.ExitStatus = doctorExitCode(rep.Worst)
	return rep, nil
}

// probeCluster checks every node CLUSTER NODES lists, masters first (by
// address), each followed by its replicas.
func (d *doctor) probeCluster(ctx context.Context, seed *doctorNode) []*doctorNode {
	byID := map[string]doctorClusterNode{}
	for _, cn := range seed.clusterNodes {
		byID[cn.id] = cn
	}
	var masters []doctorClusterNode
	replicas := map[string][]doctorClusterNode{}
	for _, cn := range seed.clusterNodes {
		if cn.master == "-" {
			masters = append(masters, cn)
		} else {
			replicas[cn.master] = append(replicas[cn.master], cn)
		}
	}
	byAddr := func(a, b doctorClusterNode) int { return strings.Compare(a.addr, b.addr) }
	slices.SortFunc(masters, byAddr)
	var order []doctorClusterNode
	for _, m := range masters {
		order = append(order, m)
		rs := replicas[m.id]
		slices.SortFunc(rs, byAddr)
		order = append(order, rs...)
		delete(replicas, m.id)
	}
	for _, rs := range replicas { // replicas of a master not listed
		order = append(order, rs...)
	}
	var addrs []string
	for _, cn := range order {
		if !cn.has("myself") && usableAddr(cn.addr) {
			addrs = append(addrs, cn.addr)
		}
	}
	probed := map[string]*doctorNode{}
	for _, n := range d.probeAll(ctx, addrs) {
		probed[n.addr] = n
	}
	nodes := make([]*doctorNode, 0, len(order))
	for _, cn := range order {
		var n *doctorNode
		switch {
		case cn.has("myself"):
			n = seed
			if usableAddr(cn.addr) {
				n.addr = cn.addr
			}
		case !usableAddr(cn.addr):
			n = &doctorNode{addr: cn.id, connErr: fmt.Errorf("the cluster knows no address for node %s", cn.id)}
		default:
			n = probed[cn.addr]
		}
		n.clusterFlags = cn.flags
		n.clusterRole = "master"
		if cn.master != "-" {
			n.clusterRole = "replica"
			n.clusterMaster = byID[cn.master].addr
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// usableAddr reports whether a CLUSTER NODES address can be dialled.
func usableAddr(addr string) bool {
	host, port, ok := strings.Cut(addr, ":")
	return ok && host != "" && port != "" && port != "0"
}

// probeAll probes the nodes at addrs side by side, in the order given.
func (d *doctor) probeAll(ctx context.Context, addrs []string) []*doctorNode {
	out := make([]*doctorNode, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() { out[i] = d.probe(ctx, addr) })
	}
	wg.Wait()
	return out
}

// doctorWidth is the width doctor's text wraps at.
const doctorWidth = 79

// writeDoctorText prints the report for people: the deployment's
// findings, then each node's, each with what it means and what to do.
func writeDoctorText(w io.Writer, rep *doctorReport) error {
	var b bytes.Buffer
	what := rep.Deployment
	if len(rep.Nodes) > 0 && rep.Nodes[0].Server != "" {
		what += ", " + rep.Nodes[0].Server + " " + rep.Nodes[0].Version
	}
	fmt.Fprintf(&b, "interlock doctor: %s (%s checked)\n", what, cli.Plural(len(rep.Nodes), "node"))
	explained := map[string]string{} // meaning and action -> where first printed
	section := func(title string, node string) {
		var fs []doctorFinding
		for _, f := range rep.Findings {
			if f.Node == node {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		for _, f := range fs {
			head := fmt.Sprintf("  %-6s  ", f.Severity)
			indent := strings.Repeat(" ", len(head))
			wrapText(&b, head, indent, f.Check+": "+f.Summary)
			key := f.Check + "\x00" + f.Meaning + "\x00" + f.Action
			switch where, seen := explained[key]; {
			case f.Severity == sevOK || f.Meaning+f.Action == "":
			case seen:
				wrapText(&b, indent, indent, "(Explained above, under "+where+".)")
			default:
				explained[key] = cmp.Or(node, "cluster")
				if f.Meaning != "" {
					wrapText(&b, indent, indent, f.Meaning)
				}
				if f.Action != "" {
					wrapText(&b, indent, indent, "What to do: "+f.Action)
				}
			}
			if !strings.HasPrefix(f.Summary, "not checked: ") { // it says so already
				prefix := "Not checked: "
				if f.Check == "access" {
					prefix = "Refused: "
				}
				for _, s := range f.Skipped {
					wrapText(&b, indent, indent, prefix+s)
				}
			}
		}
	}
	switch rep.Deployment {
	case "cluster", "slotted":
		section(rep.Deployment, "")
	}
	for _, n := range rep.Nodes {
		title := n.Addr
		var attrs []string
		if n.Role != "" {
			attrs = append(attrs, n.Role)
		}
		if n.Master != "" {
			attrs = append(attrs, "of "+n.Master)
		}
		if n.Server != "" {
			attrs = append(attrs, n.Server+" "+n.Version)
		}
		if len(attrs) > 0 {
			title += " (" + strings.Join(attrs, " ") + ")"
		}
		section(title, n.Addr)
	}
	fmt.Fprintf(&b, "\nWorst finding: %s; exit status %d.\n", rep.Worst, rep.ExitStatus)
	_, err := w.Write(b.Bytes())
	return err
}

// wrapText writes text wrapped at doctorWidth, the first line after
// first, the others after indent.
func wrapText(b *bytes.Buffer, first, indent, text string) {
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len(line)+1+len(word) > doctorWidth {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
}
