# Two commands do everything on a fresh Debian machine: `make demo` runs the console, `make test`
# passes the tests. Both install the Debian packages they need first (scripts/deps.sh).
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
PKGS ?= ./...

.PHONY: demo test check check-race bench bench-suite bench-turns approval-confusion deps build fmt vet staticcheck rolecards-check tidy-check fuzz

deps:
	@scripts/deps.sh

build:
	$(GO) build -o bin/audit ./cmd/audit

# DEMO_ARGS passes flags to audit demo, e.g. make demo DEMO_ARGS="--addr 0.0.0.0:8080"
demo: deps build
	bin/audit demo $(DEMO_ARGS)

test: deps
	$(GO) test -count=1 -timeout 45m $(PKGS)
	$(MAKE) --no-print-directory fuzz

# Brief fuzzing of the parsers that take outside input (task files, traces). The budget is a count
# of executions, not a duration: with a duration, Go's fuzz coordinator (go1.26, golang/go#75804)
# can report its own stop deadline as "context deadline exceeded" and fail with no crasher.
FUZZ_EXECS ?= 200000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLoadTask$$' -fuzztime $(FUZZ_EXECS) ./internal/task
	$(GO) test -run '^$$' -fuzz '^FuzzReadJSONL$$' -fuzztime $(FUZZ_EXECS) ./internal/trace
	$(GO) test -run '^$$' -fuzz '^FuzzReadJSONLTolerant$$' -fuzztime $(FUZZ_EXECS) ./internal/trace

# What CI runs (.ci/run): formatting, vet, staticcheck, a tidy go.mod, up-to-date role cards,
# every test with the race detector except those that hold real-time speech to a wall clock or
# bound the console's memory (under the detector's 5-10x slowdown and memory they measure the
# detector, not the code), then the whole of `make test` (the README's test command) without it,
# so every test runs at least once at full speed. .ci/run calls the two halves by name.
REALTIME_TESTS = ^(TestDemoEndToEnd|TestConsoleKilledMidCall|TestDatabaseKilledMidCall|TestSIGTERMEndsLiveCalls|TestSyntheticCall.*|TestRunAgainstReferenceAgent|TestOpenVocabularyWER|TestChromiumCallsThroughTheEngine|TestClickLandsAtTheSampleItWasSent|TestResponseLatencies|TestParticipantCallInBrowser|TestParticipantCallOverHTTPS|TestApprovalsFollowTheCallersWords|TestCueClockAndShownWhenInView|TestTooShortHangUpIsOfferedAgain|TestParticipantPagesAndPracticeCall|TestExperimenterListensInAndReviews|TestAuthorizationClassifierOnBank|TestFastAgentNeverLoopsOnBargeInTasks|TestWrongReadBackIsCorrected|TestPoliteEndings|TestGeminiGoAwayAt60sResumes|Test.*OnRecordedAudio|TestSlotAccuracy|TestCallUnderLossAndJitter|TestSignInFlood)$$
check: check-race test

check-race: deps fmt vet staticcheck tidy-check rolecards-check
	$(GO) test -race -count=1 -timeout 45m -skip '$(REALTIME_TESTS)' $(PKGS)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)

rolecards-check:
	$(GO) run ./cmd/audit rolecards build --check

tidy-check:
	@cp go.mod /tmp/go.mod.bak; cp go.sum /tmp/go.sum.bak 2>/dev/null || true
	@$(GO) mod tidy
	@git diff --exit-code go.mod go.sum || (echo "go mod tidy changed go.mod/go.sum"; exit 1)

bench: deps
	@scripts/bench.sh

# The reference agent against the frozen bank caller on every task of the suite, in real time
# and in two voices (about two hours on an idle 2-core machine): per-task AFA, WS and latency.
bench-suite: deps
	REFAGENT_SUITE_OUT=$(CURDIR)/audit_data/suite $(GO) test -run '^$$' -bench '^BenchmarkSuiteReference$$' -benchtime 1x -timeout 4h ./internal/refagent

# The same suite turn by turn, each caller turn rendered in Flite and passed through Opus but with
# no media clock (about 10 minutes per voice): how a change to understanding is measured first.
bench-turns: deps
	REFAGENT_SUITE_OUT=$(CURDIR)/audit_data/suite $(GO) test -run '^$$' -bench '^BenchmarkSuiteTurns$$' -benchtime 1x -timeout 2h ./internal/refagent

# The approval classifier's confusion table on every approve/decline/revoke variant of the bank in
# the four Flite voices through Opus (issue 14's acceptance figure).
approval-confusion: deps
	$(GO) test -count=1 -timeout 90m -run '^TestAuthorizationClassifierOnBank$$' -v ./internal/asr
