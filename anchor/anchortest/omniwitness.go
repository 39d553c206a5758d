package anchortest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bankdoor/bankdoor/internal/omniwitness"
)

// Omniwitness is a running omniwitness (package internal/omniwitness).
type Omniwitness = omniwitness.Witness

// built is the omniwitness binary, built once per test binary into a
// temporary directory that RemoveOmniwitness deletes.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// BuildOmniwitness builds the omniwitness once per process and returns
// the binary's path. Call RemoveOmniwitness from TestMain after m.Run.
func BuildOmniwitness() (string, error) {
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "bankdoor-omniwitness-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "omniwitness")
		built.err = omniwitness.Build(context.Background(), "", built.bin)
	})
	return built.bin, built.err
}

// RemoveOmniwitness deletes the binary BuildOmniwitness built, if any.
func RemoveOmniwitness() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// StartOmniwitness builds the omniwitness once per process and runs it
// with a new key named name and its files in dir, witnessing logVKey's
// log (see omniwitness.Start).
func StartOmniwitness(dir, name, logVKey string) (*Omniwitness, error) {
	bin, err := BuildOmniwitness()
	if err != nil {
		return nil, err
	}
	return omniwitness.Start(bin, dir, name, logVKey)
}

// StartOmniwitnessMLDSA is StartOmniwitness with an ML-DSA-44 witness key
// (see omniwitness.StartMLDSA).
func StartOmniwitnessMLDSA(dir, name, logVKey string) (*Omniwitness, error) {
	bin, err := BuildOmniwitness()
	if err != nil {
		return nil, err
	}
	return omniwitness.StartMLDSA(bin, dir, name, logVKey)
}

// NewOmniwitness starts an omniwitness named "witness.test" for logVKey
// in a temporary directory, stopped when tb ends (its output logged if tb
// failed). It skips tb in -short mode.
func NewOmniwitness(tb testing.TB, logVKey string) *Omniwitness {
	tb.Helper()
	return newOmniwitness(tb, func(dir string) (*Omniwitness, error) { return StartOmniwitness(dir, "witness.test", logVKey) })
}

// NewOmniwitnessMLDSA is NewOmniwitness with an ML-DSA-44 key named
// "witness-mldsa.test".
func NewOmniwitnessMLDSA(tb testing.TB, logVKey string) *Omniwitness {
	tb.Helper()
	return newOmniwitness(tb, func(dir string) (*Omniwitness, error) {
		return StartOmniwitnessMLDSA(dir, "witness-mldsa.test", logVKey)
	})
}

func newOmniwitness(tb testing.TB, start func(dir string) (*Omniwitness, error)) *Omniwitness {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds and runs omniwitness; skipped in -short mode")
	}
	w, err := start(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		w.Stop()
		if tb.Failed() {
			tb.Logf("omniwitness output:\n%s", w.Output())
		}
	})
	return w
}
