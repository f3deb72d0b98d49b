package main

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// evalMonitor runs MONITOR on every node and records the server timestamp
// of each EVAL and EVALSHA it sees. It is how the scenarios time a renewal
// tick from the server's side, the same way for interlock and Redisson.
type evalMonitor struct {
	conns []net.Conn
	wg    sync.WaitGroup

	mu    sync.Mutex
	times []float64 // seconds, Redis's clock (gettimeofday on the same host)
}

func startEvalMonitor(addrs []string) (*evalMonitor, error) {
	m := &evalMonitor{}
	for _, a := range addrs {
		conn, err := net.Dial("tcp", a)
		if err != nil {
			m.stop()
			return nil, err
		}
		if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
			conn.Close()
			m.stop()
			return nil, err
		}
		r := bufio.NewReaderSize(conn, 1<<20)
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "+OK") {
			conn.Close()
			m.stop()
			return nil, fmt.Errorf("MONITOR on %s: %q %v", a, line, err)
		}
		m.conns = append(m.conns, conn)
		m.wg.Add(1)
		go m.read(r)
	}
	return m, nil
}

func (m *evalMonitor) read(r *bufio.Reader) {
	defer m.wg.Done()
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A very long line: skip the rest of it.
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			return
		}
		// +1700000000.123456 [0 127.0.0.1:1234] "EVALSHA" ...
		s := string(line[:min(len(line), 80)])
		ts, rest, ok := strings.Cut(strings.TrimPrefix(s, "+"), " ")
		if !ok {
			continue
		}
		_, rest, _ = strings.Cut(rest, "] ")
		upper := strings.ToUpper(rest)
		if !strings.HasPrefix(upper, `"EVAL"`) && !strings.HasPrefix(upper, `"EVALSHA"`) {
			continue
		}
		t, err := strconv.ParseFloat(ts, 64)
		if err != nil {
			continue
		}
		m.mu.Lock()
		m.times = append(m.times, t)
		m.mu.Unlock()
	}
}

// stop ends MONITOR and returns the recorded bursts.
func (m *evalMonitor) stop() []evalBurst {
	for _, c := range m.conns {
		c.Close()
	}
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	return monitorBursts(m.times, 200*time.Millisecond)
}

// evalBurst is a run of script calls with no gap longer than the split gap:
// one renewal tick.
type evalBurst struct {
	calls int
	span  time.Duration // first to last call, server clock
}

func monitorBursts(times []float64, gap time.Duration) []evalBurst {
	slices.Sort(times)
	var out []evalBurst
	start := 0
	for i := 1; i <= len(times); i++ {
		if i == len(times) || times[i]-times[i-1] > gap.Seconds() {
			out = append(out, evalBurst{
				calls: i - start,
				span:  time.Duration((times[i-1] - times[start]) * float64(time.Second)),
			})
			start = i
		}
	}
	return out
}
