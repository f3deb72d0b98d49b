package redisproc

import (
	"errors"
	"net"
	"strconv"
)

// ClusterBusOffset is how far above its client port a cluster node listens
// for the cluster bus.
const ClusterBusOffset = 10000

// FreePort returns a loopback port that was free a moment ago. With bus,
// the port is at most 65535-ClusterBusOffset and port+ClusterBusOffset was
// free too. Another process may take the port before the server binds it,
// so Start retries when the server reports "Address already in use".
func FreePort(bus bool) (int, error) {
	for range 100 {
		port, err := listenAndClose(0)
		if err != nil {
			return 0, err
		}
		if !bus {
			return port, nil
		}
		if port > 65535-ClusterBusOffset {
			continue
		}
		if _, err := listenAndClose(port + ClusterBusOffset); err == nil {
			return port, nil
		}
	}
	return 0, errors.New("redisproc: no free loopback port pair for a cluster node")
}

// listenAndClose binds 127.0.0.1:port (0 picks one), closes it and returns
// the port bound.
func listenAndClose(port int) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
