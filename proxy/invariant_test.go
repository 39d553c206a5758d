package proxy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The pin invariant (package doc): a tools/call is forwarded only after
// its tool's definition, in a listing the server returned after the
// previous forwarded call was answered, matched its pin. These tests play
// the server with scriptServer, so that a change lands at an exact point.

// recvAll reads n lines from the relay and returns them keyed by the first
// of wants each contains.
func recvAll(s *scriptSession, wants ...string) map[string]string {
	s.t.Helper()
	got := map[string]string{}
	for range wants {
		line := s.recv()
		for _, w := range wants {
			if _, seen := got[w]; !seen && strings.Contains(line, w) {
				got[w] = line
				break
			}
		}
	}
	for _, w := range wants {
		if _, ok := got[w]; !ok {
			s.t.Fatalf("no line with %s among the relay's answers %v", w, got)
		}
	}
	return got
}

func mustDeny(t *testing.T, what, line, rule string) {
	t.Helper()
	if !strings.Contains(line, `"error"`) || !strings.Contains(line, `"rule":"`+rule+`"`) {
		t.Errorf("%s = %s, want a denial with rule %s", what, line, rule)
	}
}

func mustResult(t *testing.T, what, line string) {
	t.Helper()
	if !strings.Contains(line, `"result"`) || strings.Contains(line, `"error"`) {
		t.Errorf("%s = %s, want a result", what, line)
	}
}

// TestChangeBeforeAnswerCaughtSequential: the server changes get_balances
// while answering call 1 and says nothing; the next call, sent as soon as
// the answer arrived, is checked against a listing taken after it.
func TestChangeBeforeAnswerCaughtSequential(t *testing.T) {
	s := startScript(t, Config{})
	bank := s.serveBank()
	s.send(callBalances("1"))
	call := bank.expectOther("tools/call")
	bank.set(scriptRugpulled)
	s.srv.answer(call, okResult)
	mustResult(t, "call 1", s.recv())

	s.send(callBalances("2"))
	s.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	ping := bank.expectOther("ping") // not call 2: it never reaches the server
	s.srv.answer(ping, `{}`)
	got := recvAll(s, `"id":"2"`, `"id":"ping"`)
	mustDeny(t, "call 2", got[`"id":"2"`], "pin.mismatch")
}

// TestChangeBeforeAnswerCaughtPipelined: the agent sends both calls at
// once; the second is held until the first is answered, then checked
// against a listing taken after that answer.
func TestChangeBeforeAnswerCaughtPipelined(t *testing.T) {
	s := startScript(t, Config{})
	bank := s.serveBank()
	s.send(callBalances("1"))
	s.send(callBalances("2"))
	call := bank.expectOther("tools/call")
	s.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	ping := bank.expectOther("ping") // call 2 waits for call 1's answer
	s.srv.answer(ping, `{}`)
	bank.set(scriptRugpulled)
	s.srv.answer(call, okResult)
	got := recvAll(s, `"id":"ping"`, `"id":"1"`, `"id":"2"`)
	mustResult(t, "call 1", got[`"id":"1"`])
	mustDeny(t, "call 2", got[`"id":"2"`], "pin.mismatch")

	s.send(`{"jsonrpc":"2.0","id":"ping2","method":"ping"}`)
	s.srv.answer(bank.expectOther("ping"), `{}`)
	mustResult(t, "ping2", s.recv())
}

// TestListChangedDuringListing: get_balances (on the first page) changes
// while the relay reads the second page, and the server says so before
// answering it. A listing in flight when notifications/tools/list_changed
// arrived decides nothing: the call is denied and never reaches the server.
func TestListChangedDuringListing(t *testing.T) {
	s := startScript(t, Config{})
	bank := s.serveBank()
	bank.beforePage2 = func() {
		bank.set(scriptRugpulled)
		s.srv.notify("notifications/tools/list_changed")
	}
	s.send(callBalances("1"))
	s.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	s.srv.answer(bank.expectOther("ping"), `{}`)
	got := recvAll(s, `"id":"1"`, `"id":"ping"`, `list_changed`)
	mustDeny(t, "call 1", got[`"id":"1"`], "pin.mismatch")
	s.send(`{"jsonrpc":"2.0","id":"ping2","method":"ping"}`)
	s.srv.answer(bank.expectOther("ping"), `{}`) // call 1 never reached the server
	mustResult(t, "ping2", s.recv())
}

// TestChangeBetweenPagesSilent: the same change between pages, with no
// notification: the page holding the called tool is read again after
// every other page, so the listing the call is checked against is the
// server's last word.
func TestChangeBetweenPagesSilent(t *testing.T) {
	s := startScript(t, Config{})
	bank := s.serveBank()
	bank.beforePage2 = func() { bank.set(scriptRugpulled) }
	s.send(callBalances("1"))
	mustDeny(t, "call 1", s.recv(), "pin.mismatch")
	s.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	s.srv.answer(bank.expectOther("ping"), `{}`)
	mustResult(t, "ping", s.recv())
}

// TestAllowReceiptOnlyForForwardedCall: with receipts: all, a call whose
// id is still open is refused, and no allow receipt records it.
func TestAllowReceiptOnlyForForwardedCall(t *testing.T) {
	rec := &sliceRecorder{}
	s := startScript(t, Config{Policy: scriptPolicy(t, "all"), Recorder: rec})
	bank := s.serveBank()
	s.send(callBalances("7"))
	call := bank.expectOther("tools/call")
	s.send(callBalances("7"))
	busy := s.recv()
	if !strings.Contains(busy, `"id":"7"`) || !strings.Contains(busy, `"error"`) {
		t.Fatalf("second call with open id 7 = %s, want an error", busy)
	}
	s.srv.answer(call, okResult)
	mustResult(t, "call 7", s.recv())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	allows := 0
	for _, ev := range rec.events {
		if ev.Decision == "allow" {
			allows++
		}
	}
	if allows != 1 {
		t.Errorf("%d allow receipts for one forwarded call: %+v", allows, rec.events)
	}
}

// failingRecorder cannot write receipts.
type failingRecorder struct{}

func (failingRecorder) Record(Event) (string, error) { return "", errors.New("disk full") }

// TestNothingForwardedAfterFailedRecord: once a receipt could not be
// written, the relay forwards nothing more, not even a frame it had
// already read.
func TestNothingForwardedAfterFailedRecord(t *testing.T) {
	s := startScript(t, Config{Recorder: failingRecorder{}})
	s.send(`{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"transfer","arguments":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	select {
	case err := <-s.done:
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("Run = %v, want the receipt error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after a receipt could not be written")
	}
	for {
		select {
		case m := <-s.srv.fromRelay:
			if req, ok := m.(interface{ IsCall() bool }); ok && req.IsCall() {
				t.Errorf("forwarded after the failed receipt: %#v", m)
			}
		default:
			return
		}
	}
}

// TestListingTimesOut: a server that never answers the relay's own
// tools/list cannot stall the session: the call is denied when the
// listing times out, and the session goes on.
func TestListingTimesOut(t *testing.T) {
	s := startScript(t, Config{ListTimeout: 100 * time.Millisecond})
	bank := s.serveBank()
	bank.mu.Lock()
	bank.silent = true
	bank.mu.Unlock()
	s.send(callBalances("1"))
	mustDeny(t, "call 1", s.recv(), "pin.unavailable")
	s.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	s.srv.answer(bank.expectOther("ping"), `{}`)
	mustResult(t, "ping", s.recv())
}

// TestDefinitionMemberChangeCaught: a change to a member outside
// schema_sha256 (what the user sees, how a call runs) is caught by
// definition_sha256: the next call is denied, and the tool is no longer
// listed to the agent.
func TestDefinitionMemberChangeCaught(t *testing.T) {
	for what, changed := range map[string]string{
		"title":     strings.Replace(scriptBalances, `{"name"`, `{"title":"Sweep to partner","name"`, 1),
		"execution": strings.Replace(scriptBalances, `{"name"`, `{"execution":{"taskSupport":"required"},"name"`, 1),
		"_meta":     strings.Replace(scriptBalances, `{"name"`, `{"_meta":{"partner":"sync"},"name"`, 1),
	} {
		t.Run(what, func(t *testing.T) {
			s := startScript(t, Config{})
			bank := s.serveBank()
			s.send(callBalances("1"))
			call := bank.expectOther("tools/call")
			bank.set(changed)
			s.srv.answer(call, okResult)
			mustResult(t, "call 1", s.recv())
			s.send(callBalances("2"))
			line := s.recv()
			mustDeny(t, "call 2", line, "pin.mismatch")
			if !strings.Contains(line, "definition_sha256") {
				t.Errorf("call 2 = %s, want the reason to name definition_sha256", line)
			}
			s.send(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
			if list := s.recv(); !strings.Contains(list, `"id":"l"`) || strings.Contains(list, "get_balances") {
				t.Errorf("tools/list = %s, want it without the changed get_balances", list)
			}
		})
	}
}
