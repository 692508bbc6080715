package media

import "errors"

// Sentinel errors of the media engine; match them with errors.Is.
var (
	// ErrClosed is returned by operations on a closed Call or clock.
	ErrClosed = errors.New("media: closed")
	// ErrBadConfig marks an invalid CallConfig field; the wrapping message names the field and value.
	ErrBadConfig = errors.New("media: bad config")
	// ErrWrongInput is returned when PCM is pushed to a call whose caller input is RTP, or RTP to a
	// synthetic (PCM) call.
	ErrWrongInput = errors.New("media: wrong caller input for this call")
	// ErrNotAttached is returned for caller packets from a link that is not the call's attached
	// participant (it was replaced, or never attached).
	ErrNotAttached = errors.New("media: link not attached to this call")
)
