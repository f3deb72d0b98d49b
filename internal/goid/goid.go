// Package goid reads the calling goroutine's id, the default owner of a lock.
//
// The id is printed in the first line of a goroutine's stack trace,
// "goroutine 123 [running]:", and Slow reads it from there with a checked
// parse. That costs a stack walk under the runtime's global print lock,
// several microseconds under load. ID is the fast path: on amd64 and arm64
// it reads the id from the runtime's goroutine structure, at an offset that
// is not hard-coded but found once, at first use, by comparing that
// structure with Slow's answer on several goroutines. When no single offset
// matches every one of them (another architecture, a runtime whose layout
// does not fit the search), ID uses Slow for good.
package goid

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// ID returns the calling goroutine's id.
func ID() (int64, error) {
	once.Do(calibrate)
	if offset >= 0 {
		return *(*int64)(unsafe.Add(getg(), offset)), nil
	}
	return Slow()
}

// Fast reports whether ID reads the id directly (after calibrating, if it
// has not yet).
func Fast() bool {
	once.Do(calibrate)
	return offset >= 0
}

var prefix = []byte("goroutine ")

// Slow returns the calling goroutine's id as its stack trace prints it. A
// header of any other shape is an error, never id 0.
func Slow() (int64, error) {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	if !bytes.HasPrefix(b, prefix) {
		return 0, fmt.Errorf("goid: unexpected stack header %q", b)
	}
	b = b[len(prefix):]
	end := bytes.IndexByte(b, ' ')
	if end <= 0 {
		return 0, fmt.Errorf("goid: unexpected stack header %q", b)
	}
	id, err := strconv.ParseInt(string(b[:end]), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("goid: unexpected goroutine id %q", b[:end])
	}
	return id, nil
}

const (
	// searched bounds the search: the id lies well inside the first 256
	// bytes of the runtime's goroutine structure, which is larger than that.
	searched = 256
	// probes is how many goroutines must agree on the offset.
	probes = 8
)

var (
	once   sync.Once
	offset = -1 // of the id in the goroutine structure; -1: use Slow
)

// calibrate finds the one offset at which every probe goroutine's
// structure holds that goroutine's id.
func calibrate() {
	if getg() == nil {
		return
	}
	counts := make([]int, searched/8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range probes {
		wg.Go(func() {
			id, err := Slow()
			if err != nil {
				return
			}
			g := getg()
			mu.Lock()
			defer mu.Unlock()
			for i := range counts {
				if *(*int64)(unsafe.Add(g, i*8)) == id {
					counts[i]++
				}
			}
		})
	}
	wg.Wait()
	found := -1
	for i, n := range counts {
		if n == probes {
			if found >= 0 {
				return // ambiguous
			}
			found = i * 8
		}
	}
	offset = found
}
