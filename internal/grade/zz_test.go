package grade_test

import (
	"testing"

	"github.com/voicebench/humanaudit/internal/grade"
)

func BenchmarkZZCheck(b *testing.B) {
	tk := loadTask(b, "fnol-auto-glass")
	events := trace200(b)
	g := grade.New(tk, grade.Options{})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := g.Check(events, grade.CheckOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
