package lua

// The non-reentrant locks' acquire scripts (Redisson's RNonReentrantLock
// and RNonReentrantFairLock, 4.4.0 and later). Every other operation of
// these locks uses the reentrant or fair lock's scripts.
var (
	nrAcquire        = load("nr_acquire", false)
	nrFairAcquire    = load("nr_fair_acquire", false)
	nrFairTryAcquire = load("nr_fair_try_acquire", false)
)

// NonReentrantToken is the last ARGV of the non-reentrant acquire scripts;
// a re-entry attempt is answered with the error reply "ERR " + this token.
const NonReentrantToken = "NON_REENTRANT_REACQUIRE"

// NRAcquire returns nr_acquire.lua.
func NRAcquire() *Script { return nrAcquire }

// NRFairAcquire returns nr_fair_acquire.lua.
func NRFairAcquire() *Script { return nrFairAcquire }

// NRFairTryAcquire returns nr_fair_try_acquire.lua.
func NRFairTryAcquire() *Script { return nrFairTryAcquire }
