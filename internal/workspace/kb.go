package workspace

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/voicebench/humanaudit/internal/task"
)

// Hit is one knowledge document returned by kb_search.
type Hit struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"for": true, "on": true, "is": true, "are": true, "what": true, "how": true, "with": true, "by": true,
	"at": true, "be": true, "it": true, "my": true, "our": true, "do": true, "does": true, "i": true,
}

func terms(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := f[:0]
	for _, w := range f {
		if !stopwords[w] {
			out = append(out, strings.TrimSuffix(w, "s"))
		}
	}
	return out
}

// Search ranks documents for query with BM25 over title and text and returns the best k that share
// at least one term with it. It is deterministic: ties keep document order.
func Search(docs []task.Document, query string, k int) []Hit {
	q := terms(query)
	if len(q) == 0 || len(docs) == 0 {
		return []Hit{}
	}
	docTerms := make([][]string, len(docs))
	df := map[string]int{}
	total := 0
	for i, d := range docs {
		docTerms[i] = terms(d.Title + " " + d.Text)
		total += len(docTerms[i])
		seen := map[string]bool{}
		for _, t := range docTerms[i] {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	avg := float64(total) / float64(len(docs))
	const k1, b = 1.2, 0.75
	type scored struct {
		i     int
		score float64
	}
	var ranked []scored
	for i := range docs {
		tf := map[string]int{}
		for _, t := range docTerms[i] {
			tf[t]++
		}
		s := 0.0
		for _, t := range q {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (float64(len(docs))-float64(df[t])+0.5)/(float64(df[t])+0.5))
			s += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(len(docTerms[i]))/avg))
		}
		if s > 0 {
			ranked = append(ranked, scored{i, s})
		}
	}
	sort.SliceStable(ranked, func(a, c int) bool { return ranked[a].score > ranked[c].score })
	hits := []Hit{}
	for _, r := range ranked {
		if len(hits) == k {
			break
		}
		d := docs[r.i]
		hits = append(hits, Hit{ID: d.ID, Title: d.Title, Text: d.Text})
	}
	return hits
}
