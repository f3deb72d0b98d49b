package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// scenePause is scene 4: a holder process is paused (SIGSTOP) past its
// lease. Its lock expires, B takes it and processes the order; when the
// holder runs again its renewal fails, its guard is cancelled with
// rlock.ErrLockLost, and it does not write.
func (d *demo) scenePause(ctx context.Context) error {
	n := d.n
	n.scene("4. A holder that is paused",
		"Worker C holds the lock with the watchdog and is frozen mid-job (a long GC pause, a\n"+
			"stalled VM): alive, but unable to renew. Before writing, C checks its lock's guard.")
	lock, ledger := d.names("pause")
	ctxB := interlock.WithOwner(ctx, 1)
	mb := rlock.New(d.b, lock)

	h, err := d.startHolder(ctx, lock, ledger)
	if err != nil {
		return err
	}
	n.say("C", "(pid %d) locked %s with the watchdog; the ledger has no entry: starts its job", h.pid(), demoOrder)
	if err := sleepCtx(ctx, demoPauseAfter); err != nil {
		return err
	}
	if err := h.signal(sigStop); err != nil {
		return err
	}
	pausedAt := n.elapsed()
	n.say("C", "paused with SIGSTOP")
	b := lockAsync(ctxB, mb)
	defer b.stop()
	n.say("B", "waits for the lock")
	select {
	case err := <-b.C():
		b.got()
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	n.say("B", "locked %s, %s into C's pause: C's lock expired", demoOrder, secs(n.elapsed()-pausedAt))
	if err := d.expectUnprocessed(ctxB, ledger, "B", demoShortJob); err != nil {
		return err
	}
	if err := sleepCtx(ctx, demoShortJob); err != nil {
		return err
	}
	if err := d.record(ctxB, ledger, "B"); err != nil {
		return err
	}
	if err := mb.Unlock(ctxB); err != nil {
		return err
	}
	n.say("B", "done: recorded in the ledger, unlocked")

	if err := h.signal(sigCont); err != nil {
		return err
	}
	writeAt := time.Now().Add(demoWriteAfter)
	n.say("C", "resumed with SIGCONT; its job will write its result in %s", secs(demoWriteAfter))
	line, err := h.poll(ctx, demoWriteAfter)
	if err != nil {
		return err
	}
	if line != "" {
		if !strings.HasPrefix(line, holderLost+" ") {
			return storyf("C said %q after it resumed, want %q", line, holderLost)
		}
		n.say("C", "its renewal fails; its guard is cancelled: %s", strings.TrimPrefix(line, holderLost+" "))
	}
	if err := sleepCtx(ctx, time.Until(writeAt)); err != nil {
		return err
	}
	if err := h.send(holderWrite); err != nil {
		return err
	}
	if line, err = h.expect(ctx, holderRefused, holderWrote); err != nil {
		return err
	}
	if strings.HasPrefix(line, holderWrote) {
		return storyf("C wrote after its lock was lost: its guard had not heard of the loss %s after it resumed", secs(demoWriteAfter))
	}
	n.say("C", "checks its guard before writing: the lock is lost, so it stops without writing")
	h.stop(false)
	done, err := d.ledger(ctx, ledger)
	if err != nil {
		return err
	}
	if !slices.Equal(done, []string{"B"}) {
		return storyf("scene 4: ledger %v, want [B]", done)
	}
	n.verdict("C STOPPED IN TIME: it learned of the loss from its guard once it ran again, and did not write\n"+
		"(ledger: %v). A holder that writes without checking would still write late; the fenced lock\n"+
		"(--kind fenced, next release) will let the resource itself reject such stale writes by token.", done)
	return nil
}
