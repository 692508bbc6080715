package report

import (
	"bytes"
	"fmt"
	"html"
	"strconv"
)

// rgb is a colour.
type rgb struct{ R, G, B uint8 }

func (c rgb) hex() string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// The figures' palette.
var (
	colHuman = rgb{0x1f, 0x5f, 0xa8}
	colSynth = rgb{0xe0, 0x7b, 0x10}
	colInk   = rgb{0x22, 0x22, 0x22}
	colAxis  = rgb{0x55, 0x55, 0x55}
	colGrid  = rgb{0xdd, 0xdd, 0xdd}
	colFaint = rgb{0x88, 0x88, 0x88}
	colWhite = rgb{0xff, 0xff, 0xff}
)

// Text anchors.
const (
	anchorStart = iota
	anchorMiddle
	anchorEnd
)

// shape kinds of a canvas.
type (
	lineShape struct {
		x1, y1, x2, y2, width float64
		col                   rgb
		dash                  bool
	}
	rectShape struct {
		x, y, w, h float64
		fill       rgb
		stroke     *rgb
	}
	circleShape struct {
		cx, cy, r float64
		fill      *rgb // nil: hollow
		stroke    rgb
	}
	textShape struct {
		x, y     float64 // baseline start, middle or end, per anchor
		s        string
		anchor   int
		col      rgb
		vertical bool // rotated a quarter turn counter-clockwise about (x, y)
	}
)

// canvas is a figure as a list of shapes in figure units, rendered to SVG and to PNG from the same
// list so that both files show the same figure.
type canvas struct {
	w, h   float64
	title  string
	shapes []any
}

func newCanvas(w, h float64, title string) *canvas { return &canvas{w: w, h: h, title: title} }

func (c *canvas) line(x1, y1, x2, y2, width float64, col rgb, dash bool) {
	c.shapes = append(c.shapes, lineShape{x1, y1, x2, y2, width, col, dash})
}

func (c *canvas) rect(x, y, w, h float64, fill rgb, stroke *rgb) {
	c.shapes = append(c.shapes, rectShape{x, y, w, h, fill, stroke})
}

func (c *canvas) circle(cx, cy, r float64, fill *rgb, stroke rgb) {
	c.shapes = append(c.shapes, circleShape{cx, cy, r, fill, stroke})
}

func (c *canvas) text(x, y float64, s string, anchor int, col rgb) {
	c.shapes = append(c.shapes, textShape{x: x, y: y, s: s, anchor: anchor, col: col})
}

func (c *canvas) vtext(x, y float64, s string, col rgb) {
	c.shapes = append(c.shapes, textShape{x: x, y: y, s: s, anchor: anchorMiddle, col: col, vertical: true})
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// svg renders the canvas as a standalone SVG document (no external references), which is also
// what report.html inlines.
func (c *canvas) svg() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="10" role="img">`+"\n",
		f1(c.w), f1(c.h), f1(c.w), f1(c.h))
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(c.title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", f1(c.w), f1(c.h))
	for _, s := range c.shapes {
		switch s := s.(type) {
		case lineShape:
			dash := ""
			if s.dash {
				dash = ` stroke-dasharray="4 3"`
			}
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
				f1(s.x1), f1(s.y1), f1(s.x2), f1(s.y2), s.col.hex(), f1(s.width), dash)
		case rectShape:
			stroke := ""
			if s.stroke != nil {
				stroke = fmt.Sprintf(` stroke="%s" stroke-width="1"`, s.stroke.hex())
			}
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`+"\n",
				f1(s.x), f1(s.y), f1(s.w), f1(s.h), s.fill.hex(), stroke)
		case circleShape:
			fill := "none"
			if s.fill != nil {
				fill = s.fill.hex()
			}
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="%s" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n",
				f1(s.cx), f1(s.cy), f1(s.r), fill, s.stroke.hex())
		case textShape:
			anchor := [...]string{"start", "middle", "end"}[s.anchor]
			rot := ""
			if s.vertical {
				rot = fmt.Sprintf(` transform="rotate(-90 %s %s)"`, f1(s.x), f1(s.y))
			}
			fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s" text-anchor="%s"%s>%s</text>`+"\n",
				f1(s.x), f1(s.y), s.col.hex(), anchor, rot, html.EscapeString(s.s))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
