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

// Index is a BM25 index of knowledge documents, built once per task.
type Index struct {
	docs     []task.Document
	docTerms [][]string
	tf       []map[string]int
	df       map[string]int
	avg      float64
}

// NewIndex indexes docs over their title and text.
func NewIndex(docs []task.Document) *Index {
	ix := &Index{docs: docs, docTerms: make([][]string, len(docs)), tf: make([]map[string]int, len(docs)), df: map[string]int{}}
	total := 0
	for i, d := range docs {
		ix.docTerms[i] = terms(d.Title + " " + d.Text)
		total += len(ix.docTerms[i])
		ix.tf[i] = map[string]int{}
		for _, t := range ix.docTerms[i] {
			if ix.tf[i][t] == 0 {
				ix.df[t]++
			}
			ix.tf[i][t]++
		}
	}
	if len(docs) > 0 {
		ix.avg = float64(total) / float64(len(docs))
	}
	return ix
}

// Search ranks documents for query with BM25 over title and text and returns the best k that share
// at least one term with it. It is deterministic: ties keep document order.
func Search(docs []task.Document, query string, k int) []Hit {
	return NewIndex(docs).Search(query, k)
}

// Search returns the best k documents for query (see the package function Search).
func (ix *Index) Search(query string, k int) []Hit {
	q := terms(query)
	if len(q) == 0 || len(ix.docs) == 0 {
		return []Hit{}
	}
	const k1, b = 1.2, 0.75
	type scored struct {
		i     int
		score float64
	}
	var ranked []scored
	n := float64(len(ix.docs))
	for i := range ix.docs {
		s := 0.0
		for _, t := range q {
			f := float64(ix.tf[i][t])
			if f == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(len(ix.docTerms[i]))/ix.avg))
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
		d := ix.docs[r.i]
		hits = append(hits, Hit{ID: d.ID, Title: d.Title, Text: d.Text})
	}
	return hits
}
