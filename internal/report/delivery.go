package report

import (
	"fmt"
	"slices"
	"sort"

	"github.com/voicebench/humanaudit/internal/trace"
)

// SessionDelivery is how one call was delivered, read from its trace on the media clock: the
// turn-taking a reader compares between human and synthetic callers.
type SessionDelivery struct {
	CallerTalkMS int64 // caller speech (caller.speech_start to caller.speech_end)
	AgentTalkMS  int64 // agent speech (agent.speech_start to agent.speech_end)
	Overlaps     int   // stretches where both spoke at once
	OverlapMS    int64 // their total length
	BargeIns     int   // caller barge-ins over agent audio (media.barge_in from the caller)
}

// DeliveryTypes are the event types MeasureDelivery reads.
var DeliveryTypes = []trace.Type{trace.CallerSpeechStart, trace.CallerSpeechEnd, trace.AgentSpeechStart, trace.AgentSpeechEnd, trace.MediaBargeIn}

// MeasureDelivery reads a session's delivery from its trace (all of it, or its DeliveryTypes). A
// speech stretch still open at the end of the trace ends with its last event.
func MeasureDelivery(events []trace.Event) SessionDelivery {
	var d SessionDelivery
	type edge struct {
		t     int64
		agent bool
		start bool
	}
	var edges []edge
	var last int64
	for _, e := range events {
		if e.T > last {
			last = e.T
		}
		switch e.Type {
		case trace.CallerSpeechStart, trace.CallerSpeechEnd:
			edges = append(edges, edge{e.T, false, e.Type == trace.CallerSpeechStart})
		case trace.AgentSpeechStart, trace.AgentSpeechEnd:
			edges = append(edges, edge{e.T, true, e.Type == trace.AgentSpeechStart})
		case trace.MediaBargeIn:
			if e.Source == "caller" {
				d.BargeIns++
			}
		}
	}
	// Speech events carry onset times, which may precede events recorded before them.
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].t < edges[j].t })
	var caller, agent, both bool
	var prev int64
	for i := 0; i <= len(edges); i++ {
		t := last // past the last edge: close what is still open at the trace's end
		if i < len(edges) {
			t = edges[i].t
		}
		if dt := t - prev; dt > 0 {
			if caller {
				d.CallerTalkMS += dt
			}
			if agent {
				d.AgentTalkMS += dt
			}
			if caller && agent {
				d.OverlapMS += dt
			}
		}
		if t > prev {
			prev = t
		}
		if i == len(edges) {
			break
		}
		if e := edges[i]; e.agent {
			agent = e.start
		} else {
			caller = e.start
		}
		if caller && agent && !both {
			d.Overlaps++
		}
		both = caller && agent
	}
	return d
}

// DeliveryRow is one system's delivery in one mode, over its included sessions: means per session
// and the pooled response latency.
type DeliveryRow struct {
	System   string `json:"system"`
	Mode     Mode   `json:"mode"`
	Sessions int    `json:"sessions"`
	// Per session, means.
	Overlaps     Num `json:"overlaps_per_session"`
	OverlapS     Num `json:"overlap_s_per_session"`
	BargeIns     Num `json:"barge_ins_per_session"`
	CallerTalkS  Num `json:"caller_talk_s_per_session"`
	AgentTalkS   Num `json:"agent_talk_s_per_session"`
	CallerShare  Num `json:"caller_talk_share"` // caller talk / (caller + agent talk), pooled
	Responses    int `json:"responses"`
	LatencyP50MS Num `json:"latency_median_ms"`
	LatencyP90MS Num `json:"latency_p90_ms"`
}

// deliveryRows computes the delivery table: one row per system and mode that has included
// sessions, systems in report order, human before synthetic.
func (b *builder) deliveryRows() []DeliveryRow {
	var rows []DeliveryRow
	for _, sys := range b.in.Systems {
		for _, mode := range []Mode{Human, Synthetic} {
			g := b.group(sys.Label, mode)
			if len(g.all) == 0 {
				continue
			}
			row := DeliveryRow{System: sys.Label, Mode: mode, Sessions: len(g.all)}
			var overlaps, bargeIns int
			var overlapMS, callerMS, agentMS int64
			var lat []float64
			for _, s := range g.all {
				d := s.Measures.Delivery
				overlaps += d.Overlaps
				bargeIns += d.BargeIns
				overlapMS += d.OverlapMS
				callerMS += d.CallerTalkMS
				agentMS += d.AgentTalkMS
				for _, l := range s.Measures.LatenciesMS {
					lat = append(lat, float64(l))
				}
			}
			n := float64(len(g.all))
			row.Overlaps = Num(float64(overlaps) / n)
			row.OverlapS = Num(float64(overlapMS) / 1000 / n)
			row.BargeIns = Num(float64(bargeIns) / n)
			row.CallerTalkS = Num(float64(callerMS) / 1000 / n)
			row.AgentTalkS = Num(float64(agentMS) / 1000 / n)
			if callerMS+agentMS > 0 {
				row.CallerShare = Num(float64(callerMS) / float64(callerMS+agentMS))
			}
			slices.Sort(lat)
			row.Responses = len(lat)
			row.LatencyP50MS, row.LatencyP90MS = quantile(lat, 0.5), quantile(lat, 0.9)
			rows = append(rows, row)
		}
	}
	return rows
}

// DeliveryTable renders the delivery rows as a table's header and cells (for any renderer).
func DeliveryTable(rows []DeliveryRow) (head []string, cells [][]string) {
	head = []string{"system", "mode", "sessions", "overlaps", "overlap s", "barge-ins", "caller talk s", "agent talk s", "caller share", "responses", "latency p50 ms", "latency p90 ms"}
	f := func(v Num, prec int) string { return fmt.Sprintf("%.*f", prec, float64(v)) }
	for _, r := range rows {
		cells = append(cells, []string{r.System, string(r.Mode), fmt.Sprint(r.Sessions), f(r.Overlaps, 1), f(r.OverlapS, 1), f(r.BargeIns, 1),
			f(r.CallerTalkS, 1), f(r.AgentTalkS, 1), f(r.CallerShare, 2), fmt.Sprint(r.Responses), f(r.LatencyP50MS, 0), f(r.LatencyP90MS, 0)})
	}
	return head, cells
}

// deliverySection is the report's delivery section.
func deliverySection(r *Report) []any {
	if len(r.Delivery) == 0 {
		return nil
	}
	head, cells := DeliveryTable(r.Delivery)
	return []any{heading{2, "Delivery: turn-taking per system and mode"},
		para("Means per included session on the media clock: overlaps (both speaking at once) and their length, caller barge-ins over agent audio, caller and agent talk time, the caller's share of the talk, and the agent's response latency (caller speech end to agent speech start) pooled over responses. A synthetic caller whose turn-taking looks like the humans' shows similar rows."),
		table{head: head, rows: cells, right: rightFrom(2, len(head))}}
}
