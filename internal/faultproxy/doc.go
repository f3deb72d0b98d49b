// Package faultproxy is a TCP proxy that sits between a Redis client and one
// redis-server on loopback and injects the network faults the fault-injection
// tests need: partitions, resets, refused connections, latency, half-open
// connections, lost replies, lost pub/sub messages and commands the server
// seems not to support.
//
//	p, err := faultproxy.Start(srv.Addr())
//	...
//	defer p.Close()
//	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr()}})
//	...
//	p.DropReplyTo(faultproxy.EvalSHA(script.Acquire().SHA1()), 1) // lose one acquire's reply
//
// # RESP awareness
//
// The proxy parses both directions. Commands (RESP arrays of bulk strings;
// inline commands pass through) are queued per connection in the order they
// were sent, and every frame from the server, in RESP2 or RESP3, nested
// aggregates and attributes included, is matched with the oldest pending
// command. Pushes do not answer a command: RESP3 push frames, and on a
// subscribed RESP2 connection the arrays whose first element is a message or
// subscription kind. The subscription commands are answered by one
// confirmation per argument (an unsubscribe without arguments by one per
// subscription of its kind, or one if there is none), which redis-server 7.0
// sends as push frames in RESP3; the proxy follows the connection's protocol
// through HELLO and RESET. Frames are forwarded as the bytes that were read,
// never re-encoded.
//
// MONITOR, CLIENT REPLY OFF or SKIP, and the RESP3 streamed types are not
// understood: a connection that uses them is not matched correctly.
//
// # Losing replies honestly
//
// TCP never loses bytes from the middle of a stream, and a client that
// pipelines relies on that: a reply that vanished would make it take the next
// reply for the answer to the lost command. So whenever the proxy withholds a
// reply for good (DropReplyTo, or Blackhole and HalfOpen, which keep the
// connection open while on), that connection is ended before any later reply
// could reach the client: at once for DropReplyTo, and when the Blackhole or
// HalfOpen is turned off for the others. The client then sees the error a
// broken connection gives, which is what a lost reply looks like from the
// outside. Dropped pub/sub messages (DropPushes) do not end the connection:
// nothing waits for them.
//
// # Goroutines
//
// Each client connection has three goroutines (commands to the server,
// frames from the server, frames to the client) and the proxy one more
// (accept). Close ends them all and waits for them; the connections to the
// server are dialed per client connection and closed with it.
package faultproxy
