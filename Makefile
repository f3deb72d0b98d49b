# The two commands a newcomer needs (see README.md):
#   make demo   the watchdog story, told with a real Redis
#   make test   every test, with the race detector, against real Redis

GO ?= go
export GO

.PHONY: demo test check images
demo:
	@scripts/ensure-redis
	$(GO) run ./cmd/interlock demo

# Every stage (check, packages, interlockotel, matrix) runs even when an
# earlier one fails; the end lists every failure (scripts/test).
test:
	@scripts/test

# The Docker engine and the server images of the container tests
# (docs/testing.md): starts dockerd without a bridge if none answers, and
# builds the images that are missing. Without them, make test skips the
# container matrix (and fails it with CI=true).
images:
	@scripts/ensure-docker
	@scripts/build-images

# Formatting and vet, the first stage of make test.
check:
	@scripts/test check

# The side-by-side benchmark of interlock and its peers (bench/ is its own
# module, outside ./...; see bench/README.md). ROUNDS=5 by default.
ROUNDS ?= 5
.PHONY: bench nightly
bench:
	@scripts/ensure-redis
	cd bench && $(GO) run . -rounds $(ROUNDS)

# The nightly tier of the fault-injection suite (docs/reliability.md): every
# test of reliability/ at full size, then the security tests of T21
# (security/). Alone on two cores its serial tests take about 70 minutes
# and the waiting ones run together after them (docs/reliability.md).
nightly:
	@scripts/ensure-redis
	@scripts/ensure-faketime
	bash -o pipefail -c '{ $(GO) test -count=1 -timeout 100m -v ./reliability -args -tier=nightly; r=$$?; \
		$(GO) test -count=1 -v -run "^(TestMinimalACL|TestACLDenialIsClear|TestSpoofedUnlockMessages|TestLogsAndErrorsHideSecrets|TestTLS|TestCLIOverTLS)$$" ./security || r=1; \
		exit $$r; } 2>&1 | tee reliability-nightly.log'

# T23, the soak (docs/reliability.md): four processes of 16 goroutines
# contending for shared locks and semaphores under a fault every 30 s,
# SOAK long (45m by default), without the race detector so that the CPU
# goes to the workload; neither make test nor make nightly runs it. The
# report (a markdown table per 5 minutes) goes to $INTERLOCK_SOAK_REPORT
# ($TMPDIR/interlock-soak.md by default) and the log to reliability-soak.log.
SOAK ?= 45m
SOAK_TIMEOUT ?= 3h
.PHONY: soak
soak:
	@scripts/ensure-redis
	bash -o pipefail -c 'INTERLOCK_SOAK=$(SOAK) $(GO) test -count=1 -timeout $(SOAK_TIMEOUT) -v -run "^TestT23Soak$$" ./reliability -args -tier=soak 2>&1 | tee reliability-soak.log'
