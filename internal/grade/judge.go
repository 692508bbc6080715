package grade

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Judge decides whether a predicted value means the same as the gold value of a semantic field.
type Judge interface {
	// Version names the judge (model and prompt); cached verdicts are keyed by it.
	Version() string
	Verdict(ctx context.Context, field, pred, gold string) (float64, error)
}

// JudgeCache stores verdicts on disk keyed by (judge version, field, predicted, gold), so grading is
// a pure function of task, trace and cache: a replay never asks the judge again.
type JudgeCache struct{ Dir string }

type cachedVerdict struct {
	Version string  `json:"judge_version"`
	Field   string  `json:"field"`
	Pred    string  `json:"pred"`
	Gold    string  `json:"gold"`
	Score   float64 `json:"score"`
}

func (c *JudgeCache) path(version, field, pred, gold string) string {
	h := sha256.Sum256([]byte(version + "\x00" + field + "\x00" + pred + "\x00" + gold))
	return filepath.Join(c.Dir, hex.EncodeToString(h[:16])+".json")
}

// Get returns a cached verdict.
func (c *JudgeCache) Get(version, field, pred, gold string) (float64, bool) {
	if c == nil || c.Dir == "" {
		return 0, false
	}
	b, err := os.ReadFile(c.path(version, field, pred, gold))
	if err != nil {
		return 0, false
	}
	var v cachedVerdict
	if json.Unmarshal(b, &v) != nil || v.Version != version || v.Field != field || v.Pred != pred || v.Gold != gold {
		return 0, false
	}
	return v.Score, true
}

// Put stores a verdict (atomically, so concurrent graders never read half a file).
func (c *JudgeCache) Put(version, field, pred, gold string, score float64) error {
	if c == nil || c.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(cachedVerdict{version, field, pred, gold, score})
	p := c.path(version, field, pred, gold)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// judgePromptVersion changes whenever the prompt below changes, invalidating cached verdicts.
const judgePromptVersion = "p1"

// ChatJudge asks an OpenAI-compatible chat-completions endpoint at temperature 0.
type ChatJudge struct {
	BaseURL string // e.g. https://api.openai.com/v1
	Model   string
	Key     string
	Client  *http.Client
}

// Version implements Judge.
func (j *ChatJudge) Version() string { return j.Model + "/" + judgePromptVersion }

// Verdict implements Judge: 1 when the judge answers that the values match, else 0.
func (j *ChatJudge) Verdict(ctx context.Context, field, pred, gold string) (float64, error) {
	body, _ := json.Marshal(map[string]any{
		"model":       j.Model,
		"temperature": 0,
		"messages": []map[string]string{
			{"role": "system", "content": "You grade form fields filled in by a phone agent. Answer with exactly one word: yes or no."},
			{"role": "user", "content": fmt.Sprintf("Field: %s\nReference value: %s\nRecorded value: %s\nDoes the recorded value state the same information as the reference value, with nothing wrong or missing that matters?", field, gold, pred)},
		},
	})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(j.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if j.Key != "" {
		req.Header.Set("Authorization", "Bearer "+j.Key)
	}
	client := j.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("judge %s: %w", j.BaseURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("judge %s: HTTP %d", j.BaseURL, resp.StatusCode)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		return 0, errors.New("judge: malformed response")
	}
	answer := strings.ToLower(strings.TrimSpace(out.Choices[0].Message.Content))
	switch {
	case strings.HasPrefix(answer, "yes"):
		return 1, nil
	case strings.HasPrefix(answer, "no"):
		return 0, nil
	}
	return 0, fmt.Errorf("judge: answer %q is neither yes nor no", answer)
}
