package annotate

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"

	"github.com/voicebench/humanaudit/internal/audit"
)

// RatingsHeader is ratings.csv's header (long format: one row per annotator and item).
var RatingsHeader = []string{"item", "task", "plan", "annotator", "fidelity", "naturalness", "leakage", "note", "variant", "updated_at"}

// WriteRatingsCSV writes ratings in long format. The annotator column is the annotator's id (the
// same one the study report uses); leakage is yes or no.
func WriteRatingsCSV(w io.Writer, rows []audit.RatingRow) error {
	cw := csv.NewWriter(w)
	cw.Write(RatingsHeader)
	for _, r := range rows {
		leak := "no"
		if r.Leakage {
			leak = "yes"
		}
		cw.Write([]string{r.ItemID, r.TaskID, r.PlanID, strconv.FormatInt(r.AnnotatorID, 10), strconv.Itoa(r.Fidelity),
			strconv.Itoa(r.Naturalness), leak, r.Note, r.Variant, r.UpdatedAt.UTC().Format(time.RFC3339)})
	}
	cw.Flush()
	return cw.Error()
}
