//go:build amd64 || arm64

package goid

import "unsafe"

// getg returns the current goroutine's runtime structure.
//
//go:noescape
func getg() unsafe.Pointer
