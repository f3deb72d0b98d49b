package script

// NonReentrantToken, passed as the last ARGV of acquire.lua,
// fair_acquire.lua or fair_try_acquire.lua, makes them Redisson's
// non-reentrant acquire scripts (RNonReentrantLock, RNonReentrantFairLock,
// 4.4.0 and later): a re-entry is answered with the error reply
// "ERR " + this token.
const NonReentrantToken = "NON_REENTRANT_REACQUIRE"
