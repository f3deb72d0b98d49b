//go:build unix && !linux

package redistest

import "syscall"

// sysProcAttr puts the server in its own process group. Only Linux can also
// tie the server's life to the test binary (Pdeathsig).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
