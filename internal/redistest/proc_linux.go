//go:build linux

package redistest

import "syscall"

// sysProcAttr puts the server in its own process group and makes the kernel
// kill it when the thread that started it, and so the test binary, dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
