//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
)

// openPTY opens a pseudo-terminal pair; both ends are closed with the test.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// In the foreground of a terminal, CMD shares interlock's process group:
// it can read the terminal, and Ctrl-C reaches it from the terminal while
// interlock, which gets it too, waits for CMD's status.
func TestRunInTerminalForeground(t *testing.T) {
	t.Parallel()
	master, slave := openPTY(t)
	cmd := clitest.Command("run", "--redis", clitest.RedisURL(), clitest.LockName(t), "--",
		"sh", "-c", `trap "exit 7" INT; read x; echo "got $x"; sleep 30 & wait`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// A session of its own with the terminal as controlling terminal: its
	// process group is then the terminal's foreground group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	slave.Close() // the child has its copies

	var out clitest.SyncBuffer
	var reader sync.WaitGroup
	reader.Go(func() {
		buf := make([]byte, 1024)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return // EIO once every slave is closed
			}
		}
	})
	_, err := master.WriteString("hello\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "got hello") },
		10*time.Second, 10*time.Millisecond, "CMD can read the terminal; output: %q", out.String())

	_, err = master.Write([]byte{3}) // Ctrl-C
	require.NoError(t, err)
	code := clitest.Wait(t, cmd)
	assert.Equal(t, 7, code, "CMD's trap ran and interlock passed its status on; output: %q", out.String())
	master.Close()
	reader.Wait()
	assert.NotContains(t, out.String(), "interlock:", "no message from interlock")
}
