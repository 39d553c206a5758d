package proxy

import "time"

// An Observer is told of the relay's decisions as they happen, for
// metrics (see package internal/metrics). Its methods are called from
// more than one goroutine, on the request path: they must be quick and
// must not block.
type Observer interface {
	// Decided is called once for each decision on an agent's request: a
	// tools/call forwarded after all six checks ("allow", rule "allow"),
	// or any refusal ("deny", its rule), before its receipt is written.
	// tool is the tool requested, "" when none was named. took is the
	// time from reading the request to the decision: for a tools/call,
	// its wait for its turn and the relay's listing of the server
	// included.
	Decided(decision, rule, tool string, took time.Duration)
	// Answered is called when the answer to a request the relay
	// forwarded to the server is relayed to the agent; took is the time
	// from reading the request to relaying the answer.
	Answered(method string, took time.Duration)
	// Recorded is called after each receipt write, with how long it took
	// to make the receipt durable and the error if it failed.
	Recorded(decision string, took time.Duration, err error)
}

// nopObserver is the Observer of a Config without one.
type nopObserver struct{}

func (nopObserver) Decided(string, string, string, time.Duration) {}
func (nopObserver) Answered(string, time.Duration)                {}
func (nopObserver) Recorded(string, time.Duration, error)         {}
