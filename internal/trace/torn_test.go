package trace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func jsonl(t testing.TB, events []Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, events); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestTolerantReadingLeavesOutATornLastLine(t *testing.T) {
	events := sampleEvents(t)
	whole := jsonl(t, events)
	last, _ := MarshalEvent(events[len(events)-1])
	for _, cut := range []int{1, len(last) / 2, len(last) - 1} {
		// A crash while writing the last event: only part of its line reached the file.
		torn := whole[:len(whole)-len(last)-1+cut]
		got, tl, err := ReadJSONLTolerant(bytes.NewReader(torn))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if tl == nil || tl.Line != len(events) || tl.Bytes != cut {
			t.Fatalf("cut at %d: torn line %+v, want line %d of %d bytes", cut, tl, len(events), cut)
		}
		if len(got) != len(events)-1 {
			t.Fatalf("cut at %d: %d events, want the %d before the torn line", cut, len(got), len(events)-1)
		}
		if !strings.Contains(tl.String(), "line 6 is torn") {
			t.Errorf("note %q does not name the line", tl)
		}
		// The strict reader refuses it, naming the line.
		if _, err := ReadJSONL(bytes.NewReader(torn)); err == nil || !strings.Contains(err.Error(), "line 6") {
			t.Errorf("strict reader: %v", err)
		}
	}
}

func TestTolerantReadingKeepsAWholeLastLineWithoutNewline(t *testing.T) {
	events := sampleEvents(t)
	b := bytes.TrimSuffix(jsonl(t, events), []byte("\n"))
	got, tl, err := ReadJSONLTolerant(bytes.NewReader(b))
	if err != nil || tl != nil || len(got) != len(events) {
		t.Fatalf("got %d events, torn %+v, err %v; want all %d", len(got), tl, err, len(events))
	}
}

func TestTolerantReadingRefusesOtherMalformedLines(t *testing.T) {
	events := sampleEvents(t)
	lines := strings.SplitAfter(string(jsonl(t, events)), "\n")
	for name, tc := range map[string]struct {
		text string
		line string
	}{
		// A bad line in the middle is corruption, not a crash's tear.
		"middle line": {strings.Join(lines[:2], "") + `{"seq":3,"t_ms":` + "\n" + strings.Join(lines[3:], ""), "line 3"},
		// A last line that ends in a newline was written whole: if it does not decode, it is bad.
		"last line with newline": {strings.Join(lines[:5], "") + `{"seq":6,"type"` + "\n", "line 6"},
		"event without type":     {strings.Join(lines[:5], "") + `{"seq":6}`, "line 6: event has no type"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.jsonl")
			os.WriteFile(path, []byte(tc.text), 0o644)
			_, _, err := ReadFileTolerant(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.line) {
				t.Fatalf("error %v; want one naming %s and %s", err, path, tc.line)
			}
		})
	}
}

func TestJournalHoldsWhatItWasGivenAndSurvivesATornTail(t *testing.T) {
	events := sampleEvents(t)
	path := filepath.Join(t.TempDir(), "s1.jsonl")
	j, err := CreateJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if err := j.WriteEvent(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Equal(b, jsonl(t, events)) {
		t.Fatalf("journal is not the canonical JSONL of its events:\n%s", b)
	}
	// A crash mid-write of a seventh event.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":7,"t_ms":280,"wall":"2026-01-01T00:00:00.28Z","ty`)
	f.Close()
	got, tl, err := ReadFileTolerant(path)
	if err != nil || tl == nil || tl.Line != 7 || len(got) != len(events) {
		t.Fatalf("after a torn write: %d events, torn %+v, err %v", len(got), tl, err)
	}
	if err := ReplaceFile(path, got); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, jsonl(t, events)) {
		t.Fatal("ReplaceFile did not write the whole trace")
	}
	// Writing to a closed journal is not an error: it is a copy and never fails an event.
	if err := j.WriteEvent(context.Background(), events[0]); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadJSONLTolerant: the tolerant reader agrees with the strict one on every input the strict
// one accepts, and otherwise either names a line or reports one torn last line.
func FuzzReadJSONLTolerant(f *testing.F) {
	whole := jsonl(f, sampleEvents(f))
	f.Add(whole)
	f.Add(whole[:len(whole)-7])
	f.Add([]byte("{\"type\":\"x\",\"ok\":true}\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, torn, err := ReadJSONLTolerant(bytes.NewReader(data))
		strict, serr := ReadJSONL(bytes.NewReader(data))
		if serr == nil {
			if err != nil || torn != nil || len(got) != len(strict) {
				t.Fatalf("strict reader accepts %d events; tolerant: %d events, torn %+v, %v", len(strict), len(got), torn, err)
			}
			return
		}
		if err != nil && !strings.Contains(err.Error(), "line ") {
			t.Fatalf("error names no line: %v", err)
		}
		if torn != nil && bytes.HasSuffix(data, []byte("\n")) {
			t.Fatalf("a torn line %+v in input ending with a newline", torn)
		}
	})
}
