package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// Docker calls that change a container's state (pause, unpause, kill,
// start) fail now and then on a loaded machine for reasons that pass: the
// cgroup v1 freezer gives up ("unable to freeze") when a task does not
// stop in time, and cgroup or mount teardown is still "busy". Such a call
// is retried, a bounded number of times with a growing pause, within the
// operation's context.
const (
	// dockerAttempts bounds the calls of one state change.
	dockerAttempts = 6
	// dockerBackoff is the pause after the first failed call; it doubles
	// after each one (100 ms, 200 ms, ... 1.6 s: about 3 s in all).
	dockerBackoff = 100 * time.Millisecond
)

// transientDocker lists the error texts of the runtime that mean "try
// again": the engine reports them as plain strings wrapped in an "OCI
// runtime ... failed" message, with no error type to test.
var transientDocker = []string{
	"unable to freeze",
	"unable to thaw",
	"device or resource busy",
	"resource temporarily unavailable",
	"freezer.state: interrupted",
}

// isTransient reports whether err is one of the runtime's passing
// failures.
func isTransient(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, s := range transientDocker {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retryDocker calls f with a Docker client until it succeeds, fails with
// an error that is not transient, dockerAttempts calls have failed, or ctx
// ends. Before each retry, done (if not nil) is asked whether the state
// change happened after all (a failed freeze may have frozen the container
// all the same), in which case retryDocker returns nil. The error after the
// last attempt says how many were made over how long.
func retryDocker(ctx context.Context, what string, done func(context.Context) bool, f func(*testcontainers.DockerClient) error) error {
	return retryTransient(ctx, what, dockerAttempts, dockerBackoff, done, func(ctx context.Context) error {
		return withDocker(ctx, f)
	})
}

// retryTransient is retryDocker's loop, with the client taken out so that
// it can be tested without an engine.
func retryTransient(ctx context.Context, what string, attempts int, backoff time.Duration, done func(context.Context) bool, f func(context.Context) error) error {
	start := time.Now()
	pause := backoff
	var err error
	for n := 1; ; n++ {
		if err = f(ctx); err == nil || !isTransient(err) {
			return err
		}
		if n == attempts {
			return fmt.Errorf("%s: gave up after %d attempts in %v, each failing with a transient runtime error; the last: %w",
				what, n, time.Since(start).Round(time.Millisecond), err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w after %d attempts in %v; the last failed with: %w",
				what, ctx.Err(), n, time.Since(start).Round(time.Millisecond), err)
		case <-t.C:
		}
		pause *= 2
		if done != nil && done(ctx) {
			return nil
		}
	}
}
