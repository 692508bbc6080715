package store_test

import (
	"testing"

	"github.com/voicebench/humanaudit/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
