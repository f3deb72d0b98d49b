// Package pubsub lets many waiting goroutines of one process share one Redis
// subscription per channel, the way Redisson's PublishSubscribeService and
// RedissonLockEntry do for Java.
//
// A lock package subscribes before it re-checks the lock, so that a release
// between its first attempt and the subscription cannot be missed, and waits
// for a message or for the holder's TTL, because expiry publishes nothing:
//
//	sub, err := hub.Subscribe(ctx, "redisson_lock__channel:{orders:42}", sharded)
//	if err != nil {
//		return err
//	}
//	defer sub.Close()
//	for {
//		ttl, acquired := tryAcquire()
//		if acquired {
//			return nil
//		}
//		if err := sub.Wait(ctx, ttl); err != nil { // ttl < 0: no timer
//			return err
//		}
//	}
//
// # Guarantees
//
// Subscribe returns only after the server confirmed the (S)SUBSCRIBE, so a
// message published after it returns reaches the Subscription. Concurrent
// first subscribers of a channel share that one confirmation and its error.
// A Subscribe whose ctx ends first returns ctx.Err() and leaves nothing
// behind: a confirmation that arrives later is undone.
//
// Wait follows Redisson's semaphore: the payload "0" wakes exactly one parked
// waiter (the one parked longest) or, when none is parked, is stored as a
// permit for the next Wait; any other payload (Redisson sends "1" when a
// write lock is released, so that every reader can enter) wakes every waiter
// parked at that moment, one at a time in the order they parked (each woken
// waiter's Pass, next Wait or Close wakes the next, so that lock waiters
// try in the order they queued), and makes the next Wait of every other open
// Subscription of the channel return at once, so that no waiter that was
// busy re-checking the lock sleeps through it. A waiter that leaves because
// its ctx ended passes a "0" wake-up it was handed on. Permits belong to the
// channel's local entry: they are capped at one per open Subscription and
// die with the entry when its last Subscription closes. No payload can make
// the hub panic.
//
// That is the locks' wake policy, WakeLock. SubscribeWith chooses another
// for a channel: under WakeCount (the semaphores') a payload n > 0 wakes at
// most n waiters, one at a time as a "0" does, and any other payload wakes
// nobody, so a release of one permit wakes one waiter, not a herd; under
// WakeOnZero (the count-down latch's) "0" wakes every waiter and any other
// payload nobody.
//
// Pub/sub is a hint, never the only wake-up: messages published while a
// connection is down are lost. When the connection that carries a channel
// breaks, the hub reconnects (at once, then with WithReconnectBackoff),
// subscribes every channel again, and wakes every waiter of a channel when
// its new subscription is confirmed, so that they re-check. (A Subscribe that
// joins a channel just as its connection breaks, before the hub noticed,
// returns at once; that resubscription wake-up covers it too.) Callers must
// still pass the holder's TTL to Wait.
//
// A Watcher (Hub.Watch) shares a channel's subscription without waiting
// in it: it hears every message, and every wake-up of all its waiters,
// through a buffered-1 channel, and takes no "0" from the waiters, which
// still wake, or store the permit, as if it were not there. An election's
// observer watches the lock's channel so, beside candidates of its own
// process.
//
// Closing the last Subscription of a channel drops the local entry at once
// (Hub.Channels reflects it synchronously); the (S)UNSUBSCRIBE is sent
// asynchronously, promptly, by the connection goroutine. A Subscribe that
// races a pending unsubscribe of the same channel ends with a working
// subscription: the connection goroutine reconciles the desired set of
// channels with what the server confirmed, in order, on one connection.
//
// # Design: connections and goroutines
//
// A Hub keeps one dedicated connection per kind of subscription: one for
// classic channels (SUBSCRIBE/PUBLISH), and for sharded channels
// (SSUBSCRIBE/SPUBLISH) one per node that owns the slot of a subscribed
// channel, or a single one when the client is not a cluster client. Each
// connection is obtained with Dedicate and fed by PubSubHooks, and has
// exactly one goroutine of ours, which sends every (S)SUBSCRIBE and
// (S)UNSUBSCRIBE of that connection in pipelined batches and watches the
// connection's error channel. Messages are fanned out by the hooks, in the
// rueidis reader goroutine of the connection, with non-blocking sends to
// buffered-1 channels, so a slow waiter never stalls the reader. So the
// number of goroutines is constant per connection: ours, plus the reader and
// writer goroutines rueidis runs for every connection. There is no goroutine
// and no connection per waiter or per channel: 10,000 goroutines waiting on
// 1,000 channels share one subscription connection per node.
//
// Two rueidis alternatives were rejected:
//
//   - Client.Receive blocks for as long as its subscription lives and takes a
//     fixed set of channels, so channels that come and go need one blocked
//     goroutine per channel (it does run on the shared pipelined connection
//     and would resubscribe by itself after a reconnect, which is why it was
//     considered).
//   - A Dedicate()d cluster client pins itself to the slot of its first
//     keyed command and panics on a command for another slot, and SSUBSCRIBE
//     is keyed by its channel, so one dedicated cluster client cannot
//     subscribe the channels of many slots on one node.
//
// For sharded channels on a cluster the hub therefore routes by itself: it
// hashes the channel to its slot (CRC16 of the hash tag, as Redis does), maps
// the slot to its master from CLUSTER SLOTS, and dedicates a connection of
// that node's client from Client.Nodes. A MOVED reply re-routes the channel
// to the node it names, and so does a sunsubscribe the server sends on its
// own when a slot migrates. When a node's connection keeps failing, the hub
// reads the topology again and moves that node's channels to their new
// owners. Classic channels on a cluster use one connection to any node,
// because classic messages are broadcast to every node.
//
// # Lifecycle
//
// NewHub starts nothing; the first Subscribe that needs a connection starts
// its goroutine. A connection whose channels were all unsubscribed stays open
// for the next burst of waiters; its goroutine exits when the connection is
// down and no channel is routed to it any more. Hub.Close cancels every goroutine, closes every
// subscription connection (which drops their subscriptions on the server),
// waits for the goroutines to exit and wakes every parked Wait with
// ErrClosed. The hub never closes the rueidis client it was given. The hub
// writes no logs; WithErrorHandler receives background errors, and
// WithReconnectHandler hears a connection that works again.
package pubsub
