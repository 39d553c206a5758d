package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bankServer builds the fixture once per test binary into a temporary
// directory of the test.
func bankServer(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := moduleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := goBuild(ctx, false, root, dir+string(filepath.Separator), "./fixtures/bank-server"); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "bank-server")
}

func startFixture(t *testing.T, bin string, env ...string) (*Session, Fixture) {
	t.Helper()
	f := Fixture{Bin: bin, State: filepath.Join(t.TempDir(), "state.json"), Env: env}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, f.Command(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, f
}

// TestSession runs everything that needs a live fixture in one test, so the
// fixture is built once.
func TestSession(t *testing.T) {
	bin := bankServer(t)
	t.Run("RawAndSDKShareOneSession", func(t *testing.T) { testRawAndSDK(t, bin) })
	t.Run("StateAfterCalls", func(t *testing.T) { testState(t, bin) })
	t.Run("CloseReapsTheChild", func(t *testing.T) { testClose(t, bin) })
	t.Run("StartFailureShowsStderr", func(t *testing.T) { testStartFailure(t, bin) })
	t.Run("RawLineWithNewline", func(t *testing.T) { testRawNewline(t, bin) })
	t.Run("ToolDefsWalksPages", func(t *testing.T) { testToolDefs(t, bin) })
}

// testToolDefs lists 5 tools 2 per page and compares them with the
// SDK client's view.
func testToolDefs(t *testing.T, bin string) {
	s, _ := startFixture(t, bin, "BANK_FIXTURE_PAGE_SIZE=2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := s.ToolsList(ctx, nil)
	if err != nil || len(first.Tools) != 2 || first.NextCursor == nil {
		t.Fatalf("first page: %+v, %v; want 2 tools and a cursor", first, err)
	}
	defs, err := s.ToolDefs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var raw, sdk []string
	for _, d := range defs {
		var tool struct{ Name string }
		if err := json.Unmarshal(d, &tool); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, tool.Name)
	}
	for tool, err := range s.Client().Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		sdk = append(sdk, tool.Name)
	}
	if len(raw) != 5 || !cmp.Equal(raw, sdk) {
		t.Errorf("ToolDefs names %q, SDK client %q; want the same 5", raw, sdk)
	}
}

// testRawAndSDK interleaves SDK calls and raw frames on one stdio session
// from several goroutines; each side must get exactly its own answers.
func testRawAndSDK(t *testing.T, bin string) {
	s, _ := startFixture(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 4 {
		wg.Go(func() {
			for range 5 {
				res, err := s.Client().ListTools(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				if len(res.Tools) != 5 {
					errs <- fmt.Errorf("SDK tools/list: %d tools, want 5", len(res.Tools))
				}
			}
		})
		wg.Go(func() {
			for range 5 {
				id := s.NextID()
				resp, err := s.Raw(ctx, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`))
				if err != nil {
					errs <- err
					return
				}
				var msg struct {
					ID     json.RawMessage
					Result struct{ Tools []json.RawMessage }
				}
				if err := json.Unmarshal(resp, &msg); err != nil || string(msg.ID) != id || len(msg.Result.Tools) != 5 {
					errs <- fmt.Errorf("raw tools/list %s: answer %.200s (%v)", id, resp, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testState(t *testing.T, bin string) {
	s, f := startFixture(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, err := ReadState(f.State)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "transfer",
		Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_savings", "amount_cents": 250}}); err != nil {
		t.Fatal(err)
	}
	after, err := ReadState(f.State)
	if err != nil {
		t.Fatal(err)
	}
	if got := Moved(before.Accounts, after.Accounts); got != 500 {
		t.Errorf("Moved = %d, want 500 (250 out, 250 in)", got)
	}
	var log []string
	for _, e := range after.Log {
		log = append(log, e.String())
	}
	want := []string{`tools/call "transfer" "{\"amount_cents\":250,\"from_account\":\"acc_checking\",\"to_account\":\"acc_savings\"}"`}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func testClose(t *testing.T, bin string) {
	s, _ := startFixture(t, bin)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	code, err := s.Wait(ctx)
	if err != nil || code != 0 {
		t.Errorf("after Close: exit status %d, %v; want 0", code, err)
	}
	if !strings.Contains(s.Stderr(), "bank-server: UNSAFE test fixture") {
		t.Errorf("stderr not captured: %q", s.Stderr())
	}
}

func testStartFailure(t *testing.T, bin string) {
	f := Fixture{Bin: bin, State: filepath.Join(t.TempDir(), "state.json"), Env: []string{"BANK_FIXTURE_VARIANT=nonsense"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Start(ctx, f.Command(), nil)
	if err == nil || !strings.Contains(err.Error(), "BANK_FIXTURE_VARIANT") {
		t.Errorf("Start of a fixture that exits at once: %v; want an error quoting its stderr", err)
	}
}

func testRawNewline(t *testing.T, bin string) {
	s, _ := startFixture(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Raw(ctx, []byte("{\"jsonrpc\":\"2.0\",\n\"id\":\"raw-1\",\"method\":\"ping\"}")); err == nil {
		t.Error("Raw accepted a line with a newline in it")
	}
	if err := s.Client().Ping(ctx, nil); err != nil {
		t.Errorf("session broken after a refused raw line: %v", err)
	}
}

func TestIsRaw(t *testing.T) {
	for line, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":"raw-3","result":{}}`:                    true,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`:           true,
		`{"jsonrpc":"2.0","id":3,"result":{}}`:                          false,
		`{"jsonrpc":"2.0","id":"bankdoor-4","method":"roots/list"}`:     false,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`: false,
		`{"jsonrpc":"2.0","ID":"raw-1","result":{}}`:                    false,
		`[{"jsonrpc":"2.0","id":"raw-1","result":{}}]`:                  true,
		`not json`: true,
	} {
		if got := isRaw([]byte(line)); got != want {
			t.Errorf("isRaw(%s) = %v, want %v", line, got, want)
		}
	}
}

func TestMoved(t *testing.T) {
	a := map[string]int64{"x": 10, "y": 5}
	for _, c := range []struct {
		after map[string]int64
		want  int64
	}{
		{map[string]int64{"x": 10, "y": 5}, 0},
		{map[string]int64{"x": 4, "y": 11}, 12},
		{map[string]int64{"x": 10}, 5},
		{map[string]int64{"x": 10, "y": 5, "z": 7}, 7},
	} {
		if got := Moved(a, c.after); got != c.want {
			t.Errorf("Moved(%v, %v) = %d, want %d", a, c.after, got, c.want)
		}
	}
}

func TestReadStateRejects(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown":  `{"accounts":{},"log":[],"extra":1}`,
		"accounts": `{"log":[]}`,
		"garbage":  `{"accounts":`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadState(path); err == nil {
			t.Errorf("ReadState(%s) accepted %s", name, body)
		}
	}
}

func TestCopyReceipts(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{"000001.json": "a", "000002.json": "b", ".lock": "", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := CopyReceipts(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := Receipts(dst)
	if err != nil || !cmp.Equal(got, []string{"000001.json", "000002.json"}) {
		t.Errorf("receipts copied: %q, %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "000002.json")); string(b) != "b" {
		t.Errorf("000002.json copied as %q", b)
	}
}

func TestRawQueue(t *testing.T) {
	q := newRawQueue()
	q.put([]byte("a"))
	q.put([]byte("b"))
	if l, err := q.take(); string(l) != "a" || err != nil {
		t.Fatalf("take = %q, %v", l, err)
	}
	if got := q.drain(); len(got) != 1 || string(got[0]) != "b" {
		t.Fatalf("drain = %q", got)
	}
	if l, err := q.take(); l != nil || err != nil {
		t.Fatalf("take of empty queue = %q, %v", l, err)
	}
	q.close()
	<-q.ready
	if _, err := q.take(); err != errOutputClosed {
		t.Fatalf("take after close: %v", err)
	}
}
