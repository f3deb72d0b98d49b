package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/rlock"
)

// holderCmdName is the hidden command the demo re-executes interlock with
// to have a lock held by another process, one it can kill or pause.
const holderCmdName = "demo-holder"

// The holder's protocol, one line each way. On stdout it says:
//
//	locked [<token>]  it holds the lock (with the watchdog); with --fence,
//	                  the fenced lock, and this is its fencing token
//	lost <cause>      its guard was cancelled: the lock is lost
//	wrote             it wrote its result to the ledger
//	rejected <token>  it wrote through the fence, which refused its token:
//	                  it had admitted <token>, a newer one; nothing was written
//
// On stdin it reads "write-unchecked": the job is done, record it in the
// ledger without checking the guard first, as a careless holder would. At
// the end of stdin it unlocks, if it still holds the lock, and exits.
const (
	holderLocked         = "locked"
	holderLost           = "lost"
	holderWrote          = "wrote"
	holderRejected       = "rejected"
	holderWriteUnchecked = "write-unchecked"
)

// HolderCommand is the demo's holder process, hidden from the help: a
// worker that holds a lock in a process of its own.
var HolderCommand = cli.Command{Name: holderCmdName, Run: holderRun, Hidden: true}

// holderRun is HolderCommand's Run: "interlock demo-holder [--redis URL]
// [--watchdog-timeout D] --ledger KEY [--fence KEY] LOCK": a worker in a
// process of its own (worker C of the demo). It locks LOCK, then follows the protocol above.
// With --fence it takes the fenced lock, and writes to the ledger through
// a RedisFence on that fence key with its token.
func holderRun(ctx context.Context, io cli.Stdio, args []string) error {
	fs := cli.NewFlagSet(holderCmdName, "")
	redis := redisconn.AddFlag(fs.FlagSet, io.Getenv)
	watchdog := &cli.DurationFlag{D: demoWatchdog}
	fs.Var(watchdog, "watchdog-timeout", "watchdog lease")
	ledger := fs.String("ledger", "", "list to write to")
	fenceKey := fs.String("fence", "", "fence key: take the fenced lock and write through this fence")
	names, err := fs.ParseArgs(io, args)
	if err != nil {
		return err
	}
	if len(names) != 1 || *ledger == "" {
		return cli.Usagef(holderCmdName, "want --ledger KEY and one LOCK")
	}
	c, err := redisconn.Connect(redis.URLs, interlock.WithWatchdogTimeout(watchdog.D))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx = interlock.WithOwner(ctx, 1)
	var (
		m     interlock.Locker
		token uint64
	)
	if *fenceKey == "" {
		m = rlock.New(c.Client, names[0])
		err = m.Lock(ctx)
	} else {
		fm := fenced.New(c.Client, names[0])
		m = fm
		token, err = fm.LockToken(ctx)
	}
	if err != nil {
		return exit.WithCode(exit.Unavailable, err)
	}
	if *fenceKey == "" {
		fmt.Fprintln(io.Out, holderLocked)
	} else {
		fmt.Fprintf(io.Out, "%s %d\n", holderLocked, token)
	}
	guard := m.Guard(ctx)

	// The reader ends at the end of stdin, which is also the only way out
	// of the loop below: it is joined there.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(io.In)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	guardDone := guard.Done()
	for {
		select {
		case <-guardDone:
			guardDone = nil
			fmt.Fprintf(io.Out, "%s %v\n", holderLost, context.Cause(guard))
		case line, ok := <-lines:
			if !ok {
				if guard.Err() == nil {
					_ = kinds.Release(ctx, m.Unlock) // else it expires by itself
				}
				return nil
			}
			if line != holderWriteUnchecked {
				continue
			}
			if *fenceKey == "" {
				if err := c.Redis.Do(ctx, c.Redis.B().Rpush().Key(*ledger).Element("C").Build()).Error(); err != nil {
					return exit.WithCode(exit.Unavailable, err)
				}
				fmt.Fprintln(io.Out, holderWrote)
				continue
			}
			// The resource's check: the fence compares the token, records
			// it and writes, in one script, or refuses and writes nothing.
			fence := fenced.NewRedisFence(c.Redis, *fenceKey)
			err := fence.Exec(ctx, token, fenced.Write{Cmd: "RPUSH", Key: *ledger, Args: []string{"C"}})
			switch {
			case err == nil:
				fmt.Fprintln(io.Out, holderWrote)
				continue
			case !errors.Is(err, fenced.ErrStale):
				return exit.WithCode(exit.Unavailable, err)
			}
			highest, err := fence.Highest(ctx)
			if err != nil {
				return exit.WithCode(exit.Unavailable, err)
			}
			fmt.Fprintf(io.Out, "%s %d\n", holderRejected, highest)
		}
	}
}
