// Command lockbench runs interlock and its peers through the same lock
// scenarios against one Redis, interleaved round by round, and prints a
// Markdown table of the medians over the rounds. See README.md.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

type config struct {
	redis     string
	rounds    int
	duration  time.Duration
	warmup    time.Duration
	scenarios []Scenario
	libs      []Library
}

func main() {
	var (
		redisAddr = flag.String("redis", "", "Redis host:port; empty starts a redis-server from PATH on a free port")
		cluster   = flag.Bool("cluster", false, "run on a Redis Cluster: -redis is then a seed node; without -redis, start a 3-master cluster on loopback")
		rounds    = flag.Int("rounds", 5, "rounds; every round runs every library once per scenario")
		duration  = flag.Duration("duration", 1500*time.Millisecond, "measured time per cell (one library, one scenario, one round)")
		warmup    = flag.Duration("warmup", 300*time.Millisecond, "unmeasured time per library and scenario before the first round")
		scen      = flag.String("scenarios", "S1,S2,S3,S4,S5,S6", "comma-separated scenario ids")
		libs      = flag.String("libs", "", "comma-separated library names (default: all registered but the opt-in ones)")
		child     = flag.Bool("child", false, "internal: run as the second process of S4")
		childLib  = flag.String("child-lib", "", "internal")
		childKey  = flag.String("child-key", "", "internal")
		childWork = flag.Int("child-workers", 0, "internal")
		childScen = flag.String("child-scenario", "", "internal")
	)
	flag.Parse()
	clusterMode = *cluster
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *child {
		if err := runChild(ctx, *redisAddr, *childLib, *childScen, *childKey, *childWork, *duration); err != nil {
			fmt.Fprintln(os.Stderr, "lockbench child:", err)
			os.Exit(1)
		}
		return
	}
	scale, rest := splitScale(*scen)
	if len(scale) > 0 {
		scfg, err := scaleConfigFromFlags()
		if err == nil {
			err = runScaleScenarios(ctx, scale, scfg, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockbench:", err)
			os.Exit(1)
		}
		if len(rest) == 0 {
			return
		}
	}
	cfg := config{redis: *redisAddr, rounds: *rounds, duration: *duration, warmup: *warmup}
	for _, id := range rest {
		s, ok := scenarioByID(strings.ToUpper(strings.TrimSpace(id)))
		if !ok {
			fmt.Fprintf(os.Stderr, "lockbench: unknown scenario %q\n", id)
			os.Exit(2)
		}
		cfg.scenarios = append(cfg.scenarios, s)
	}
	all := Libraries()
	if *libs == "" {
		for _, l := range all {
			if _, optIn := l.(OptIn); !optIn {
				cfg.libs = append(cfg.libs, l)
			}
		}
	} else {
		for name := range strings.SplitSeq(*libs, ",") {
			i := slices.IndexFunc(all, func(l Library) bool { return l.Name() == strings.TrimSpace(name) })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "lockbench: unknown library %q\n", name)
				os.Exit(2)
			}
			cfg.libs = append(cfg.libs, all[i])
		}
	}
	if cfg.rounds < 1 || cfg.duration <= 0 {
		fmt.Fprintln(os.Stderr, "lockbench: -rounds must be ≥ 1 and -duration > 0")
		os.Exit(2)
	}
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(1)
	}
}

// results[scenario id][library name] is one entry per round.
type results map[string]map[string][]cellResult

type cellResult struct {
	s   Sample
	err error
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	r, err := startBenchRedis(ctx, cfg.redis)
	if err != nil {
		return err
	}
	defer r.stop()
	sessions := make([]Session, len(cfg.libs))
	for i, l := range cfg.libs {
		if sessions[i], err = l.Open(ctx, r.addr); err != nil {
			return fmt.Errorf("open %s: %w", l.Name(), err)
		}
		defer sessions[i].Close()
	}
	progress := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format, a...) }

	if clusterMode {
		progress("lockbench: Redis %s, %d-master cluster at %s; warm-up %v per cell\n", r.version(ctx), len(r.masters), strings.Join(r.masters, " "), cfg.warmup)
	} else {
		progress("lockbench: Redis %s at %s; warm-up %v per cell\n", r.version(ctx), r.addr, cfg.warmup)
	}
	for _, sc := range cfg.scenarios {
		for i, l := range cfg.libs {
			_, err := runCell(ctx, r, l, sessions[i], sc, "warm", cfg.warmup)
			if err != nil && !errors.Is(err, errNA) {
				progress("  warm-up %s %s: %v\n", sc.ID, l.Name(), err)
			}
		}
	}
	res := results{}
	began := time.Now()
	for round := range cfg.rounds {
		progress("lockbench: round %d/%d\n", round+1, cfg.rounds)
		for _, sc := range cfg.scenarios {
			if res[sc.ID] == nil {
				res[sc.ID] = map[string][]cellResult{}
			}
			for i, l := range cfg.libs {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s, err := runCell(ctx, r, l, sessions[i], sc, fmt.Sprint("r", round), cfg.duration)
				if err != nil && !errors.Is(err, errNA) {
					progress("  %s %s: %v\n", sc.ID, l.Name(), err)
				}
				if rep, ok := sessions[i].(CellReporter); ok && err == nil {
					if note := rep.CellDone(cellOf(sc, l, fmt.Sprint("r", round), cfg.duration), s); note != "" {
						progress("  %s %s: %s\n", sc.ID, l.Name(), note)
					}
				}
				res[sc.ID][l.Name()] = append(res[sc.ID][l.Name()], cellResult{s, err})
			}
		}
	}
	printTable(out, tableInfo{
		redisVersion: r.version(ctx), masters: len(r.masters), rounds: cfg.rounds, duration: cfg.duration,
		wall: time.Since(began),
	}, cfg.scenarios, cfg.libs, res)
	return nil
}

// runCell runs one library in one scenario, in one or two processes,
// bracketed by INFO commandstats.
func runCell(ctx context.Context, r *benchRedis, l Library, sess Session, sc Scenario, tag string, d time.Duration) (Sample, error) {
	if _, floor := sess.(Floor); floor && !sc.Floors {
		return Sample{}, errNA
	}
	if _, floor := sess.(ContendedFloor); floor && sc.Floors {
		return Sample{}, errNA
	}
	if _, one := sess.(OneProcess); one && sc.Procs > 1 {
		return Sample{}, errNA
	}
	if _, err := mutexFor(sess, sc.Kind, "probe"); err != nil {
		if _, ok := sess.(CellRunner); !ok {
			return Sample{}, err
		}
	}
	c := cellOf(sc, l, tag, d)
	var ch *childProc
	if sc.Procs > 1 {
		var err error
		if ch, err = startChild(ctx, r.addr, l.Name(), c); err != nil {
			return Sample{}, err
		}
		defer ch.kill()
	}
	if sc.Permits > 0 {
		if err := r.setPermits(ctx, c); err != nil {
			return Sample{}, err
		}
	}
	before, err := r.commandCalls(ctx)
	if err != nil {
		return Sample{}, err
	}
	if ch != nil {
		if err := ch.start(); err != nil {
			return Sample{}, err
		}
	}
	s, err := runLocal(ctx, sess, c)
	if ch != nil {
		cs, cerr := ch.result()
		s.merge(cs)
		err = errors.Join(err, cerr)
	}
	// Server-side deltas include every process's commands.
	after, ierr := r.commandCalls(ctx)
	if ierr == nil {
		s.Scripts, s.Executed = serverCounts(before, after)
	}
	return s, errors.Join(err, ierr)
}

// cellOf is the Cell of one library in one scenario: tag makes its key
// unique to the round.
func cellOf(sc Scenario, l Library, tag string, d time.Duration) Cell {
	return Cell{Scenario: sc, Key: "lockbench:" + sc.ID + ":" + keySafe(l.Name()) + ":" + tag, Workers: sc.Workers / sc.Procs, Duration: d}
}

func keySafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

// childProc is the second process of S4: this binary re-executed with
// -child. It opens its own Session, warms up on another key, prints
// "ready", waits for a line on stdin, runs its half of the cell and prints
// its Sample as JSON.
type childProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startChild(ctx context.Context, addr, lib string, c Cell) (*childProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-child", "-redis", addr, "-child-lib", lib,
		"-child-scenario", c.Scenario.ID, "-child-key", c.Key,
		"-child-workers", fmt.Sprint(c.Workers), "-duration", c.Duration.String()}
	if clusterMode {
		args = append(args, "-cluster")
	}
	if *interlockWatchdog > 0 {
		args = append(args, "-interlock-watchdog", interlockWatchdog.String())
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &childProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := p.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		p.kill()
		return nil, fmt.Errorf("child not ready: %q %v", line, err)
	}
	return p, nil
}

func (p *childProc) start() error {
	_, err := io.WriteString(p.stdin, "go\n")
	return err
}

func (p *childProc) result() (Sample, error) {
	var s Sample
	err := json.NewDecoder(p.out).Decode(&s)
	werr := p.cmd.Wait()
	if err != nil {
		return s, fmt.Errorf("child result: %w (exit: %v)", err, werr)
	}
	return s, nil
}

func (p *childProc) kill() {
	if p.cmd.ProcessState == nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

func runChild(ctx context.Context, addr, lib, scen, key string, workers int, d time.Duration) error {
	i := slices.IndexFunc(Libraries(), func(l Library) bool { return l.Name() == lib })
	sc, ok := scenarioByID(scen)
	if i < 0 || !ok || addr == "" {
		return fmt.Errorf("bad child arguments")
	}
	sess, err := Libraries()[i].Open(ctx, addr)
	if err != nil {
		return err
	}
	defer sess.Close()
	warm := Cell{Scenario: sc, Key: key + ":warm", Workers: workers, Duration: 200 * time.Millisecond}
	if _, err := runLocal(ctx, sess, warm); err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	s, err := runLocal(ctx, sess, Cell{Scenario: sc, Key: key, Workers: workers, Duration: d})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(s)
}
