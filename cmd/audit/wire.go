package main

import (
	"github.com/voicebench/humanaudit/internal/console"
	"github.com/voicebench/humanaudit/internal/report"
	"github.com/voicebench/humanaudit/internal/store"
	"github.com/voicebench/humanaudit/internal/study"
	"github.com/voicebench/humanaudit/internal/synth"
	"github.com/voicebench/humanaudit/internal/web"
)

// This command is where the concrete PostgreSQL store meets the packages that use it: each of them
// declares the small interface it needs, and the store satisfies all of them.
var (
	_ study.Handout   = (*store.DB)(nil)
	_ console.Store   = (*store.DB)(nil)
	_ console.Results = (*store.DB)(nil)
	_ synth.Store     = (*store.DB)(nil)
	_ report.Source   = (*store.DB)(nil)
	_ web.Store       = (*store.DB)(nil)
)
