//go:build !linux

package redistest

import "errors"

// socketLocalAddr is available on Linux only (see laddr_linux.go).
func socketLocalAddr(pid, fd int) (string, error) {
	return "", errors.New("reading a socket's address needs /proc (Linux)")
}
