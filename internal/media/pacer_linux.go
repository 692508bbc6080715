package media

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerFD is a Linux timerfd read through the runtime's poller: its expiry makes the poller's
// epoll wait return at once, where the runtime's own timers would wait for the next millisecond.
type timerFD struct {
	f   *os.File
	fd  int
	buf [8]byte
}

func newKernelTimer() (kernelTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	return &timerFD{f: os.NewFile(uintptr(fd), "media-pacer-timerfd"), fd: fd}, nil
}

func (t *timerFD) set(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, time.Nanosecond)))}
	_ = unix.TimerfdSettime(t.fd, 0, &spec, nil) // a failed arm leaves the Go timer to fire
}

func (t *timerFD) wait() error {
	// The read returns the number of expirations (8 bytes) once the timer has fired.
	_, err := t.f.Read(t.buf[:])
	return err
}

func (t *timerFD) close() { t.f.Close() }
