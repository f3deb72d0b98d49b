package exit

// Help lists the exit codes, for the help texts.
const Help = `Exit status:
  0-125   run: CMD's own exit status; other commands: 0 on success
          (doctor: nothing worse than info found)
  1       another failure (for example a demo scene that went wrong, a lock
          unlock left because it is not locked as --kind said, or a
          semaphore or latch init found it already set, or a warning of
          doctor)
  2       doctor: a hazard, a setting that can silently break locks
  64      usage error: bad flags or arguments (such as permits below 1, a
          negative count, a lease under 1ms), an unusable name, a name whose
          key holds another type of data, another kind of lock or a count
          that is no integer, unlock without --force or of a key that is no
          lock of that kind
  69      Redis unreachable or failing (a password it wants missing or
          refused included), or another failure before CMD started (doctor:
          an error, such as a node that cannot be reached)
  75      run: the lock or the permits were still busy when --wait ran out;
          latch await: the latch was still closed when --wait ran out
  79      run: the lock or an expirable permit was lost while CMD ran (CMD
          was terminated), or was found gone when CMD exited
  126     run: CMD could not be executed
  127     run: CMD was not found
  128+N   run: CMD died of signal N, or interlock got signal N
          (SIGINT 130, SIGTERM 143) while waiting for the lock
A CMD that itself exits with 64, 69, 75 or 79 cannot be told apart from
interlock by the code alone; interlock's own failures also print a line
starting with "interlock: " on stderr.
`
