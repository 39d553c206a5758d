package anchor_test

import (
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
)

// TestMain removes the omniwitness binary the interop tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	anchortest.RemoveOmniwitness()
	os.Exit(code)
}

// startOmniwitness runs the real omniwitness for the log logVKey.
func startOmniwitness(tb testing.TB, logVKey string) *anchortest.Omniwitness {
	return anchortest.NewOmniwitness(tb, logVKey)
}

// countingTransport counts the requests sent to witnesses.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// take returns the count so far and resets it.
func (c *countingTransport) take() int64 { return c.n.Swap(0) }
