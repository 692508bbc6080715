#!/usr/bin/env bash
# make bench: every benchmark of the project, each with a run length that suits it, reporting the
# figures that matter through b.ReportMetric (traces/s, ms of added latency, sessions, events/s,
# seconds per report, the reference agent's response latency, seconds per power simulation).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
status=0
bench() { # bench BENCHTIME PACKAGE...
  local t=$1; shift
  # Besides the result lines, the log lines that qualify a figure: the load it was measured under,
  # how the lossy link was impaired (netem, or user space where the kernel has no sch_netem), and
  # why a benchmark was skipped (the netem call needs root and tc).
  go test -run '^$' -bench . -benchtime "$t" -count 1 "$@" 2>&1 |
    grep -E '^(Benchmark|FAIL|---|ok|panic)|^ +[a-z_]+\.go:[0-9]+: (impaired by|the kernel has no netem|needs root|tc not found|ip not found|load average before|latency at)' || true
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
echo "# grading on one core: grading alone, and verification (format checks, workspace replay) then grading"
bench 2s -cpu 1 ./internal/grade
echo "# statistics, planning, adapters, codecs"
bench 2s ./internal/stats ./internal/study ./internal/agent/openai ./internal/agent/gemini ./internal/media ./internal/media/libopus ./internal/condition
echo "# media path over loopback WebRTC (latency per frame, CPU per session-second, sessions with no late tick), and a call through 10% loss and 30 ms jitter (tc netem in a network namespace: root only)"
bench 1x ./internal/rtc
echo "# power of the 150-session plan: 2,000 simulated studies analysed with the report's intervals (load: $(cut -d' ' -f1-3 /proc/loadavg))"
bench 1x ./internal/power
echo "# event log durability, speech recognition, reference agent latency, full report"
bench 10x ./internal/store
bench 3x ./internal/asr
bench 1x -skip '^BenchmarkSuite(Reference|Turns)$' ./internal/refagent ./internal/report
echo "# the reference agent on the whole suite in real time (hours): make bench-suite; turn by turn (minutes): make bench-turns"
exit $status
