package redistest

import (
	"errors"
	"net"
	"strconv"
)

// clusterBusOffset is how far above its client port a cluster node listens
// for the cluster bus.
const clusterBusOffset = 10000

// freePort returns a loopback port that was free a moment ago. With bus, the
// port is at most 65535-clusterBusOffset and port+clusterBusOffset was free
// too. Another process may take the port before the server binds it, so
// callers retry startup when the server reports "Address already in use".
func freePort(bus bool) (int, error) {
	for range 100 {
		port, err := listenAndClose(0)
		if err != nil {
			return 0, err
		}
		if !bus {
			return port, nil
		}
		if port > 65535-clusterBusOffset {
			continue
		}
		if _, err := listenAndClose(port + clusterBusOffset); err == nil {
			return port, nil
		}
	}
	return 0, errors.New("redistest: no free loopback port pair for a cluster node")
}

// listenAndClose binds 127.0.0.1:port (0 picks one), closes it and returns the
// port bound.
func listenAndClose(port int) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
