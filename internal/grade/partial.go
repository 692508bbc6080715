package grade

import (
	"fmt"

	"github.com/voicebench/humanaudit/internal/trace"
)

// cutShort are the session.end reasons of calls that the platform (not the caller, the agent or
// the time limit) ended before they were done: a crash or stop of the console, failed database
// writes, a lost agent or participant connection, an experimenter's exclusion.
var cutShort = map[string]bool{
	"console_crash": true, "console_shutdown": true, "storage_error": true, "platform_lost": true,
	"excluded_by_experimenter": true, "caller_disconnected": true, "cancelled": true,
}

// CutShort reports whether a session.end reason means the call was cut short by the platform.
func CutShort(reason string) bool { return cutShort[reason] }

// PartialNote says, for a trace of a call that was cut short, that its grade covers only what
// happened until then; "" for a whole call. It depends on the trace alone, so regrading gives the
// same note.
func PartialNote(events []trace.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == trace.SessionEnd {
			if reason := events[i].Text; cutShort[reason] {
				return fmt.Sprintf("partial: the call was cut short (%s) at %d ms; graded on the %d events recorded until then", reason, events[i].T, len(events))
			}
			return ""
		}
	}
	return fmt.Sprintf("partial: the trace has no session.end; graded on its %d events", len(events))
}
