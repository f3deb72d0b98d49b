package run

import (
	"context"
	"os"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
)

// DefaultGrace is the default of --grace: the time between SIGTERM and
// SIGKILL when a hold is lost while CMD runs.
const DefaultGrace = defaultGrace

// Job is a CMD that another command runs under a hold of its own, as run
// runs CMD under a lock.
type Job struct {
	Argv  []string      // CMD and its arguments
	Name  string        // INTERLOCK_LOCK's value
	What  string        // the hold, in messages: `leadership of election "E"`
	Env   []string      // CMD's variables besides INTERLOCK_LOCK
	Grace time.Duration // between SIGTERM and SIGKILL
}

// Supervise starts job and runs it as run runs CMD: signals from sigs are
// passed on, and when guard ends CMD gets SIGTERM, then SIGKILL after
// Grace. It returns once CMD exited: CMD's status, or lost and exit.Lost.
func Supervise(ctx context.Context, io cli.Stdio, guard context.Context, job Job, sigs <-chan os.Signal) (lost bool, status error) {
	cfg := &runConfig{argv: job.Argv, lock: job.Name, what: job.What, grace: job.Grace}
	return supervise(ctx, io, &heldJob{g: guard, vars: job.Env}, cfg, sigs)
}

// heldJob is the locker of a hold taken elsewhere: supervise reads only
// its guard and its variables.
type heldJob struct {
	g    context.Context
	vars []string
}

func (h *heldJob) acquire(context.Context, cli.DurationFlag, time.Duration) (bool, error) {
	return true, nil
}
func (h *heldJob) unlock(context.Context) error          { return nil }
func (h *heldJob) guard(context.Context) context.Context { return h.g }
func (h *heldJob) env() []string                         { return h.vars }
