package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
	"github.com/interlock-go/interlock/fenced"
)

// scenePause is scene 4: a holder process of the fenced lock is paused
// (SIGSTOP) past its lease. Its lock expires, B takes it with a newer
// token and writes through the ledger's fence; when the holder runs again
// its renewal fails and its guard is cancelled, but it writes anyway,
// without checking, and the fence rejects its older token.
func (d *demo) scenePause(ctx context.Context) error {
	n := d.n
	n.scene("4. A holder that is paused",
		"Worker C holds the fenced lock with the watchdog and is frozen mid-job (a long GC pause, a\n"+
			"stalled VM): alive, but unable to renew. Each acquisition of the fenced lock gets a fencing\n"+
			"token larger than all before it, and the ledger is written through a fence that refuses a\n"+
			"token older than one it has admitted.")
	lock, ledger, fenceKey := d.fencedNames("pause")
	ctxB := interlock.WithOwner(ctx, 1)
	mb := fenced.New(d.b, lock)
	fence := fenced.NewRedisFence(d.rc, fenceKey)

	h, err := d.startHolder(ctx, lock, ledger, fenceKey)
	if err != nil {
		return err
	}
	d.chart.acquired(ctx, "C", fmt.Sprintf("token %d", h.token))
	n.say("C", "(pid %d) locked %s with the watchdog, token %d; the ledger has no entry: starts its job",
		h.pid(), demoOrder, h.token)
	if err := sleepCtx(ctx, demoPauseAfter); err != nil {
		return err
	}
	if err := h.signal(proc.PauseSignal); err != nil {
		return err
	}
	pausedAt := n.elapsed()
	d.chart.note("C", "paused (SIGSTOP)")
	n.say("C", "paused with SIGSTOP")
	var tokenB uint64
	b := lockAsync(ctxB, func(ctx context.Context) (err error) {
		tokenB, err = mb.LockToken(ctx)
		return err
	})
	defer b.stop()
	n.say("B", "waits for the lock")
	if err := b.wait(ctx); err != nil {
		return err
	}
	d.chart.acquired(ctxB, "B", fmt.Sprintf("token %d", tokenB))
	n.say("B", "locked %s with token %d, %s into C's pause: C's lock expired", demoOrder, tokenB, secs(n.elapsed()-pausedAt))
	if tokenB <= h.token {
		return storyf("scene 4: B's token %d is not larger than C's %d", tokenB, h.token)
	}
	if err := d.expectUnprocessed(ctxB, ledger, "B", demoShortJob); err != nil {
		return err
	}
	if err := sleepCtx(ctx, demoShortJob); err != nil {
		return err
	}
	switch err := fence.Exec(ctxB, tokenB, fenced.Write{Cmd: "RPUSH", Key: ledger, Args: []string{"B"}}); {
	case errors.Is(err, fenced.ErrStale):
		return storyf("scene 4: the fence refused B's token %d", tokenB)
	case err != nil:
		return err
	}
	d.chart.note("B", fmt.Sprintf("writes: the fence admits token %d", tokenB))
	if err := mb.Unlock(ctxB); err != nil {
		return err
	}
	d.chart.released("B", nil)
	n.say("B", "done: recorded in the ledger through the fence with token %d (admitted), unlocked", tokenB)

	if err := h.signal(proc.ResumeSignal); err != nil {
		return err
	}
	writeAt := time.Now().Add(demoWriteAfter)
	d.chart.note("C", "resumed (SIGCONT)")
	n.say("C", "resumed with SIGCONT; its job will write its result in %s", secs(demoWriteAfter))
	line, err := h.poll(ctx, demoWriteAfter)
	if err != nil {
		return err
	}
	if line != "" {
		if !strings.HasPrefix(line, holderLost+" ") {
			return storyf("C said %q after it resumed, want %q", line, holderLost)
		}
		d.chart.renewFailed("C", "lock lost")
		n.say("C", "its renewal fails; its guard is cancelled: %s", strings.TrimPrefix(line, holderLost+" "))
	}
	if err := sleepCtx(ctx, time.Until(writeAt)); err != nil {
		return err
	}
	if err := h.send(holderWriteUnchecked); err != nil {
		return err
	}
	n.say("C", "writes anyway, without checking its guard, as a careless holder would: token %d, through the fence", h.token)
	for {
		if line, err = h.expect(ctx, holderLost, holderRejected, holderWrote); err != nil {
			return err
		}
		if !strings.HasPrefix(line, holderLost+" ") {
			break
		}
		// The guard heard of the loss only now; the write is on its way.
		d.chart.renewFailed("C", "lock lost")
		n.say("C", "its renewal fails; its guard is cancelled: %s", strings.TrimPrefix(line, holderLost+" "))
	}
	if line == holderWrote {
		return storyf("scene 4: the fence accepted C's stale token %d after B's %d", h.token, tokenB)
	}
	highest, err := lineToken(line)
	if err != nil {
		return storyf("scene 4: C said %q: %v", line, err)
	}
	d.chart.note("C", fmt.Sprintf("writes anyway: the fence rejects token %d", h.token))
	n.say("C", "the fence REJECTS token %d: it has admitted token %d (B's); nothing is written", h.token, highest)
	if highest != tokenB {
		return storyf("scene 4: the fence had admitted token %d, want B's %d", highest, tokenB)
	}
	h.stop(false)
	done, err := d.ledger(ctx, ledger)
	if err != nil {
		return err
	}
	if !slices.Equal(done, []string{"B"}) {
		return storyf("scene 4: ledger %v, want [B]", done)
	}
	n.verdict("C STOPPED IN TIME: not by its guard, which it ignored, but by the resource: the fence\n"+
		"rejected C's token %d once it had admitted B's %d (ledger: %v). With the fenced lock\n"+
		"(--kind fenced) a stale write is refused by token, even one already on its way when its\n"+
		"holder was paused, where no guard could have stopped it.", h.token, tokenB, done)
	return nil
}
