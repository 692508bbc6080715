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
  go test -run '^$' -bench . -benchtime "$t" -count 1 "$@" 2>&1 | grep -E '^(Benchmark|FAIL|---|ok|panic)' || true
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
echo "# grading on one core: grading alone, and verification (format checks, workspace replay) then grading"
bench 2s -cpu 1 ./internal/grade
echo "# statistics, planning, adapters, codecs"
bench 2s ./internal/stats ./internal/study ./internal/agent/openai ./internal/agent/gemini ./internal/media ./internal/condition
echo "# media path over loopback WebRTC (latency per frame, CPU per session-second, sessions with no late tick)"
bench 1x ./internal/rtc
echo "# power of the 150-session plan: 2,000 simulated studies analysed with the report's intervals (load: $(cut -d' ' -f1-3 /proc/loadavg))"
bench 1x ./internal/power
echo "# event log durability, speech recognition, reference agent latency, full report"
bench 10x ./internal/store
bench 3x ./internal/asr
bench 1x ./internal/refagent ./internal/report
exit $status
