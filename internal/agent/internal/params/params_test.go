package params

import "testing"

func TestUnknownNamesTheFirstSortedPath(t *testing.T) {
	tree := Tree{"type": nil, "audio": {"input": {"format": nil}, "output": nil}}
	for _, c := range []struct {
		v    map[string]any
		want string
	}{
		{map[string]any{"type": "realtime", "audio": map[string]any{"output": map[string]any{"anything": 1}}}, ""},
		{map[string]any{"zeta": 1, "alpha": 2}, "session.alpha"},
		{map[string]any{"audio": map[string]any{"input": map[string]any{"format": 1, "rate": 2}}}, "session.audio.input.rate"},
	} {
		if got := Unknown("session", c.v, tree); got != c.want {
			t.Errorf("Unknown(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
