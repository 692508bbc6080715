// Package ui is the console's browser app (participant, experimenter and annotator pages), plain
// HTML, CSS and JavaScript embedded in the binary: no Node build is needed to run the console.
package ui

import "embed"

// Files holds every page, script and stylesheet of the browser app.
//
//go:embed *.html *.js *.css
var Files embed.FS
