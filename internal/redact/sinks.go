package redact

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// Writer redacts everything written through it before passing it on. A value split across two
// writes is still caught: the bytes that could begin a value are held back until the next write
// (or Flush) shows whether they do. Line ends are never held, so line-oriented output (logs,
// progress lines) passes at once.
type Writer struct {
	set *Set
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a writer redacting with set (nil: the process-wide set).
func NewWriter(w io.Writer, set *Set) *Writer {
	if set == nil {
		set = &process
	}
	return &Writer{set: set, w: w}
}

// Write redacts p and writes it on. It reports len(p) once the redacted bytes are written.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	out := w.set.Bytes(w.buf)
	hold := w.set.heldTail(out)
	if _, err := w.w.Write(out[:len(out)-hold]); err != nil {
		w.buf = w.buf[:0]
		return 0, err
	}
	w.buf = append(w.buf[:0], out[len(out)-hold:]...)
	return len(p), nil
}

// Flush writes what is held back.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.set.Bytes(w.buf))
	w.buf = w.buf[:0]
	return err
}

// Handler wraps a slog.Handler so that messages and attribute values are redacted before they
// reach it (a JSON or text handler would otherwise quote a key from an error value).
type Handler struct {
	set  *Set
	next slog.Handler
}

// NewHandler returns a redacting handler in front of next (set nil: the process-wide set).
func NewHandler(next slog.Handler, set *Set) *Handler {
	if set == nil {
		set = &process
	}
	return &Handler{set: set, next: next}
}

// Enabled reports whether next handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle redacts the record and passes it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.set.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.set.String(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, g := range attrs {
			out[i] = h.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		// Errors and other values are rendered by the next handler through Error() or String():
		// render them here and redact the text.
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.set.String(err.Error()))
		}
		if s := fmt.Sprintf("%+v", v.Any()); h.set.Contains([]byte(s)) {
			return slog.String(a.Key, h.set.String(s))
		}
		return a
	}
	return a
}

// WithAttrs redacts the attributes once and returns a handler carrying them.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = h.attr(a)
	}
	return &Handler{set: h.set, next: h.next.WithAttrs(out)}
}

// WithGroup returns a handler that qualifies attributes with name.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{set: h.set, next: h.next.WithGroup(name)}
}
