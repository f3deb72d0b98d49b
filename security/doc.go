// Package security holds interlock's security tests (T21 of
// docs/reliability.md); it has no non-test code.
//
// Each test starts its own redis-server and checks one threat: a user
// restricted to the ACL of docs/operations.md hits no NOPERM, and a missing
// permission fails at once with a clear error; spoofed release messages
// never hand out a lock nor make waiters spin; logs and errors never show
// the password, the client id or an owner id; locks and the interlock
// command work over TLS. make nightly runs them.
package security
