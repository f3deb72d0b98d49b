package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// holderCmdName is the hidden command the demo re-executes interlock with
// to have a lock held by another process, one it can kill or pause.
const holderCmdName = "demo-holder"

// The holder's protocol, one line each way. On stdout it says:
//
//	locked            it holds the lock (with the watchdog)
//	lost <cause>      its guard was cancelled: the lock is lost
//	wrote             it wrote its result to the ledger
//	refused <cause>   it was told to write, but its guard says the lock
//	                  is lost, so it did not
//
// On stdin it reads "write" (the job is done: record it in the ledger).
// At the end of stdin it unlocks, if it still holds the lock, and exits.
const (
	holderLocked  = "locked"
	holderLost    = "lost"
	holderWrote   = "wrote"
	holderRefused = "refused"
	holderWrite   = "write"
)

// holderCmd is "interlock demo-holder [--redis URL] [--watchdog-timeout D]
// --ledger KEY LOCK": a worker in a process of its own (worker C of the
// demo). It locks LOCK, then follows the protocol above.
func holderCmd(ctx context.Context, io stdio, args []string) error {
	fs := newFlagSet(holderCmdName)
	redis := addRedisFlag(fs, io.getenv)
	watchdog := &durationFlag{d: demoWatchdog}
	fs.Var(watchdog, "watchdog-timeout", "watchdog lease")
	ledger := fs.String("ledger", "", "list to write to")
	names, err := parseFlags(fs, io, args)
	if err != nil {
		return err
	}
	if len(names) != 1 || *ledger == "" {
		return usageErrorf(holderCmdName, "want --ledger KEY and one LOCK")
	}
	c, err := connect(redis.urls, interlock.WithWatchdogTimeout(watchdog.d))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx = interlock.WithOwner(ctx, 1)
	m := rlock.New(c.lc, names[0])
	if err := m.Lock(ctx); err != nil {
		return withCode(exitUnavailable, err)
	}
	fmt.Fprintln(io.out, holderLocked)
	guard := m.Guard(ctx)

	// The reader ends at the end of stdin, which is also the only way out
	// of the loop below: it is joined there.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(io.in)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	guardDone := guard.Done()
	for {
		select {
		case <-guardDone:
			guardDone = nil
			fmt.Fprintf(io.out, "%s %v\n", holderLost, context.Cause(guard))
		case line, ok := <-lines:
			if !ok {
				if guard.Err() == nil {
					unlockQuietly(ctx, m.Unlock)
				}
				return nil
			}
			if line != holderWrite {
				continue
			}
			// The check a careful worker makes before every write.
			if guard.Err() != nil {
				fmt.Fprintf(io.out, "%s %v\n", holderRefused, context.Cause(guard))
				continue
			}
			if err := c.rc.Do(ctx, c.rc.B().Rpush().Key(*ledger).Element("C").Build()).Error(); err != nil {
				return withCode(exitUnavailable, err)
			}
			fmt.Fprintln(io.out, holderWrote)
		}
	}
}
