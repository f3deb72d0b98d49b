package main

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/lua"
)

// The protocol floors of a Redisson-compatible, retry-safe lock: Redisson's
// acquire script, then its latched unlock script, by plain EVALSHA on a
// default rueidis client, with none of interlock's Go code. They cannot
// wait: they run where nothing contends (S1, S2).
//
//   - The bare floor leaves each latch to its TTL and runs no goroutine or
//     timer besides the caller's: the denominator of "× floor".
//   - The other deletes the latches afterwards in DELs batched over 2 ms
//     on a goroutine of its own (Redisson sends one DEL per unlock): the
//     denominator of "× floor 2".
//
// The unlock script publishes with floorPublish's command.
type protocolFloor struct{ bare bool }

func init() {
	Register(0, protocolFloor{bare: true})
	Register(0, protocolFloor{})
}

func (f protocolFloor) Name() string {
	if f.bare {
		return "floor: bare Redisson lock scripts (rueidis)"
	}
	return "floor: Redisson lock scripts (rueidis)"
}

func (f protocolFloor) Open(ctx context.Context, addr string) (Session, error) {
	rc, publish, err := openFloor(ctx, addr, floorScript("acquire"), floorScript("unlock"))
	if err != nil {
		return nil, err
	}
	cnt := newCountingClient(rc)
	s := &protocolSession{cnt: cnt, id: keys.RequestID(), publish: publish}
	if !f.bare {
		s.del = newReceiptDeleter(cnt)
	}
	return s, nil
}

type protocolSession struct {
	cnt     *countingClient
	del     *receiptDeleter // nil: the latches are left to their TTL
	id      string          // the client id of the owner strings
	publish string          // floorPublish
	threads atomic.Int64
}

func (f *protocolSession) IsFloor()                { /* marker */ }
func (f *protocolSession) Commands() (int64, bool) { return f.cnt.n.Load(), true }

func (f *protocolSession) Close() error {
	if f.del != nil {
		f.del.close()
	}
	f.cnt.Client.Close()
	return nil
}

func (f *protocolSession) Mutex(name string) Mutex {
	return &protocolMutex{f: f, name: name, channel: keys.LockChannel(name),
		owner: f.id + ":" + strconv.FormatInt(f.threads.Add(1), 10)}
}

type protocolMutex struct {
	f                    *protocolSession
	name, channel, owner string
}

var errProtocolBusy = errors.New("floor: lock held (the floor does not wait)")

// Lock is acquire.lua with the watchdog lease.
func (m *protocolMutex) Lock(ctx context.Context) error {
	ttl, err := floorAcquire(ctx, m.f.cnt, m.name, m.owner)
	if err == nil && ttl >= 0 {
		return errProtocolBusy
	}
	return err
}

// Unlock is unlock.lua under a fresh latch, then the latch's deletion
// unless the floor is bare.
func (m *protocolMutex) Unlock(ctx context.Context) error {
	latch := keys.UnlockLatch(m.name, keys.RequestID())
	n, err := floorUnlock(ctx, m.f.cnt, m.name, m.channel, m.owner, m.f.publish, latch)
	if err != nil {
		return err
	}
	if m.f.del != nil {
		m.f.del.add(latch)
	}
	if n != 1 {
		return errors.New("floor: the lock was not released")
	}
	return nil
}

// The floor's lease and latch TTL: interlock's defaults.
const (
	floorWatchdogMs = "30000"
	floorLatchMs    = "20000"
)

// openFloor opens a floor's default rueidis client on addr, with the
// command releases are announced by (floorPublish) and scripts loaded on
// every node.
func openFloor(ctx context.Context, addr string, scripts ...*lua.Script) (rueidis.Client, string, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, "", err
	}
	// A deadline, so that these calls leave the connection in rueidis's
	// synchronous mode, as a lone caller with a deadline finds it: a
	// context that can end but has no deadline switches a connection to
	// its pipelining goroutines for good.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	publish, err := floorPublish(ctx, rc)
	if err == nil {
		err = loadFloorScripts(ctx, rc, scripts...)
	}
	if err != nil {
		rc.Close()
		return nil, "", err
	}
	return rc, publish, nil
}

// floorAcquire sends acquire.lua with the watchdog lease for owner: -1
// when acquired, else the holder's TTL in milliseconds.
func floorAcquire(ctx context.Context, c rueidis.Client, name, owner string) (int64, error) {
	ms, err := c.Do(ctx, c.B().Evalsha().Sha1(floorScript("acquire").SHA1()).Numkeys(1).Key(name).
		Arg(floorWatchdogMs, owner).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return -1, nil
	}
	return ms, err
}

// floorUnlock sends unlock.lua for owner under latch, announcing the
// release with publish; it returns the script's answer.
func floorUnlock(ctx context.Context, c rueidis.Client, name, channel, owner, publish, latch string) (int64, error) {
	return c.Do(ctx, c.B().Evalsha().Sha1(floorScript("unlock").SHA1()).Numkeys(3).Key(name, channel, latch).
		Arg("0", floorWatchdogMs, owner, publish, floorLatchMs).Build()).AsInt64()
}

// loadFloorScripts loads scripts into the script cache of every node: the
// server, or each node of the cluster (the floors send EVALSHA only).
func loadFloorScripts(ctx context.Context, rc rueidis.Client, scripts ...*lua.Script) error {
	for _, n := range rc.Nodes() {
		for _, s := range scripts {
			if err := n.Do(ctx, n.B().ScriptLoad().Script(s.Source()).Build()).Error(); err != nil {
				return err
			}
		}
	}
	return nil
}

// floorPublish is the command the floors' scripts announce releases with,
// chosen as interlock and Redisson choose it by default: SPUBLISH on a
// cluster whose nodes answer PUBSUB SHARDNUMSUB (Redis 7+), else PUBLISH.
// It sends nothing to one server.
func floorPublish(ctx context.Context, rc rueidis.Client) (string, error) {
	if rc.Mode() != rueidis.ClientModeCluster {
		return "PUBLISH", nil
	}
	err := rc.Do(ctx, rc.B().PubsubShardnumsub().Channel("0").Build()).Error()
	if err == nil {
		return "SPUBLISH", nil
	}
	if _, ok := rueidis.IsRedisErr(err); ok {
		return "PUBLISH", nil
	}
	return "", err
}

// floorScript is the library's script in name.lua, which the floors send
// by hand.
func floorScript(name string) *lua.Script {
	s, ok := lua.Lookup(name)
	if !ok {
		panic("bench: no script " + name + ".lua")
	}
	return s
}
