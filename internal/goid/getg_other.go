//go:build !amd64 && !arm64

package goid

import "unsafe"

// getg is not available here; ID always uses Slow.
func getg() unsafe.Pointer { return nil }
