package preroll

import "testing"

func TestKeepsTheMostRecentStretch(t *testing.T) {
	b := New(100, 1000) // 100 samples
	for i := 0; i < 10; i++ {
		b.Push([]byte{byte(i)}, 40)
	}
	frames, n := b.Take()
	if n != 120 || len(frames) != 3 || frames[0][0] != 7 || frames[2][0] != 9 {
		t.Fatalf("kept %d samples in %d frames starting at %v", n, len(frames), frames[0])
	}
	if frames, n := b.Take(); len(frames) != 0 || n != 0 {
		t.Fatal("take did not empty the buffer")
	}
	d := New(0, 24000)
	if d.max != DefaultMS*24 {
		t.Fatalf("default %d samples", d.max)
	}
}
