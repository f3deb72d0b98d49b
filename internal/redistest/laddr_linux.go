//go:build linux

package redistest

import (
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// socketLocalAddr returns the local address of the IPv4 TCP socket that
// process pid has open as file descriptor fd, read from /proc: for a server
// whose CLIENT LIST has no laddr field (Redis 6.0).
func socketLocalAddr(pid, fd int) (string, error) {
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
	if err != nil {
		return "", err
	}
	inode, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return "", fmt.Errorf("fd %d of process %d is %s, no socket", fd, pid, link)
	}
	inode = strings.TrimSuffix(inode, "]")
	table, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(table)) {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) < 10 || f[9] != inode {
			continue
		}
		ipHex, portHex, ok := strings.Cut(f[1], ":")
		ip, err1 := hex.DecodeString(ipHex)
		port, err2 := strconv.ParseUint(portHex, 16, 16)
		if !ok || err1 != nil || err2 != nil || len(ip) != 4 {
			return "", fmt.Errorf("unreadable local address %q in /proc/%d/net/tcp", f[1], pid)
		}
		// The kernel prints the address as one little-endian word.
		addr := net.IPv4(ip[3], ip[2], ip[1], ip[0])
		return net.JoinHostPort(addr.String(), strconv.FormatUint(port, 10)), nil
	}
	return "", fmt.Errorf("socket %s of process %d is no IPv4 TCP socket", inode, pid)
}
