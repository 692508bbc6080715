package report

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// pngScale is the PNG's pixels per figure unit: figures are rasterised at twice their SVG size so
// that the bitmap text stays legible.
const pngScale = 2

// raster draws a canvas into an RGBA image: anti-aliased lines and discs by coverage, rectangles
// on the pixel grid, text with the built-in bitmap font. Pure Go, no font files.
type raster struct {
	img *image.RGBA
	s   float64
}

// png renders the canvas as PNG bytes. The encoding is deterministic.
func (c *canvas) png() ([]byte, error) {
	w, h := int(math.Ceil(c.w*pngScale)), int(math.Ceil(c.h*pngScale))
	r := &raster{img: image.NewRGBA(image.Rect(0, 0, w, h)), s: pngScale}
	r.fill(0, 0, float64(w), float64(h), colWhite)
	for _, s := range c.shapes {
		switch s := s.(type) {
		case lineShape:
			r.line(s)
		case rectShape:
			x0, y0, x1, y1 := s.x*r.s, s.y*r.s, (s.x+s.w)*r.s, (s.y+s.h)*r.s
			r.fill(x0, y0, x1, y1, s.fill)
			if s.stroke != nil {
				for _, l := range []lineShape{{s.x, s.y, s.x + s.w, s.y, 1, *s.stroke, false}, {s.x + s.w, s.y, s.x + s.w, s.y + s.h, 1, *s.stroke, false},
					{s.x, s.y + s.h, s.x + s.w, s.y + s.h, 1, *s.stroke, false}, {s.x, s.y, s.x, s.y + s.h, 1, *s.stroke, false}} {
					r.line(l)
				}
			}
		case circleShape:
			r.disc(s)
		case textShape:
			r.text(s)
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.DefaultCompression}
	if err := enc.Encode(&b, r.img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// blend paints col over pixel (x, y) with coverage a in [0, 1].
func (r *raster) blend(x, y int, col rgb, a float64) {
	if a <= 0 || !(image.Point{x, y}.In(r.img.Rect)) {
		return
	}
	if a > 1 {
		a = 1
	}
	i := r.img.PixOffset(x, y)
	p := r.img.Pix[i : i+4 : i+4]
	p[0] = uint8(float64(p[0])*(1-a) + float64(col.R)*a + 0.5)
	p[1] = uint8(float64(p[1])*(1-a) + float64(col.G)*a + 0.5)
	p[2] = uint8(float64(p[2])*(1-a) + float64(col.B)*a + 0.5)
	p[3] = 0xff
}

// fill paints the pixels whose centres lie in [x0,x1)×[y0,y1) (pixel coordinates).
func (r *raster) fill(x0, y0, x1, y1 float64, col rgb) {
	c := color.RGBA{col.R, col.G, col.B, 0xff}
	for y := int(math.Round(y0)); y < int(math.Round(y1)); y++ {
		for x := int(math.Round(x0)); x < int(math.Round(x1)); x++ {
			if (image.Point{x, y}).In(r.img.Rect) {
				r.img.SetRGBA(x, y, c)
			}
		}
	}
}

// line draws a segment of the given width as a capsule, with coverage falling off over one pixel.
func (r *raster) line(l lineShape) {
	x1, y1, x2, y2 := l.x1*r.s, l.y1*r.s, l.x2*r.s, l.y2*r.s
	half := math.Max(l.width*r.s, 1) / 2
	dx, dy := x2-x1, y2-y1
	length2 := dx*dx + dy*dy
	length := math.Sqrt(length2)
	minX, maxX := int(math.Floor(math.Min(x1, x2)-half-1)), int(math.Ceil(math.Max(x1, x2)+half+1))
	minY, maxY := int(math.Floor(math.Min(y1, y2)-half-1)), int(math.Ceil(math.Max(y1, y2)+half+1))
	dash := 4 * r.s
	for y := minY; y <= maxY; y++ {
		for x := minX; x <= maxX; x++ {
			px, py := float64(x)+0.5, float64(y)+0.5
			t := 0.0
			if length2 > 0 {
				t = math.Max(0, math.Min(1, ((px-x1)*dx+(py-y1)*dy)/length2))
			}
			if l.dash && int(t*length/(dash*7/4))%2 == 1 {
				continue
			}
			cx, cy := x1+t*dx, y1+t*dy
			d := math.Hypot(px-cx, py-cy)
			r.blend(x, y, l.col, half+0.5-d)
		}
	}
}

// disc draws a filled or hollow circle.
func (r *raster) disc(c circleShape) {
	cx, cy, rad := c.cx*r.s, c.cy*r.s, c.r*r.s
	ring := 1.5 * r.s / 2
	for y := int(cy - rad - 3); y <= int(cy+rad+3); y++ {
		for x := int(cx - rad - 3); x <= int(cx+rad+3); x++ {
			d := math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy)
			if c.fill != nil {
				r.blend(x, y, *c.fill, rad+0.5-d)
			}
			r.blend(x, y, c.stroke, ring+0.5-math.Abs(d-rad))
		}
	}
}

// text draws s with the bitmap font, one figure unit per font pixel.
func (r *raster) text(t textShape) {
	w := textWidth(t.s)
	start := t.x
	switch t.anchor {
	case anchorMiddle:
		start -= w / 2
	case anchorEnd:
		start -= w
	}
	unit := int(r.s)
	pos := 0.0
	for _, ch := range t.s {
		g := glyphOf(ch)
		for row, bits := range g {
			for col := range glyphW {
				if bits&(1<<(glyphW-1-col)) == 0 {
					continue
				}
				// Offset along the text and across it (rows from the cell's top, the baseline below row 6).
				along := start + pos + float64(col)
				across := float64(row - glyphAscent)
				var fx, fy float64
				if t.vertical {
					fx, fy = t.x+across, t.y-(along-t.x)-1 // the unit square runs up the page
				} else {
					fx, fy = along, t.y+across
				}
				px, py := int(math.Round(fx*r.s)), int(math.Round(fy*r.s))
				for dy := range unit {
					for dx := range unit {
						r.blend(px+dx, py+dy, t.col, 1)
					}
				}
			}
		}
		pos += glyphAdvance
	}
}
