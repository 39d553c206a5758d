package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy"
)

// wire records, below the SDK's streamable HTTP client, each POST's
// request and the bytes of its answer as the client reads them, and the
// bytes of the GET streams.
type wire struct {
	inner http.RoundTripper

	mu    sync.Mutex
	posts []*recordedPost
	get   bytes.Buffer
}

type recordedPost struct {
	request     string
	contentType string
	answer      bytes.Buffer
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	var p *recordedPost
	if req.Method == http.MethodPost && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		p = &recordedPost{request: string(b)}
	}
	resp, err := w.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case p != nil:
		p.contentType = resp.Header.Get("Content-Type")
		w.posts = append(w.posts, p)
		resp.Body = &tee{ReadCloser: resp.Body, mu: &w.mu, to: &p.answer}
	case req.Method == http.MethodGet:
		resp.Body = &tee{ReadCloser: resp.Body, mu: &w.mu, to: &w.get}
	}
	return resp, nil
}

// tee copies what is read from a body to a buffer guarded by mu.
type tee struct {
	io.ReadCloser
	mu *sync.Mutex
	to *bytes.Buffer
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.mu.Lock()
	t.to.Write(p[:n])
	t.mu.Unlock()
	return n, err
}

// answerTo returns the content type and the answer so far of the POST
// whose request contains s.
func (w *wire) answerTo(s string) (string, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.posts {
		if strings.Contains(p.request, s) {
			return p.contentType, p.answer.String()
		}
	}
	return "", ""
}

func (w *wire) getStream() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.get.String()
}

// eventKinds names the messages of a text/event-stream body in order:
// "progress TOKEN N" for a progress notification, "result" for a result,
// else the message itself.
func eventKinds(body string) []string {
	var out []string
	for ev := range strings.SplitSeq(body, "\n\n") {
		for l := range strings.SplitSeq(ev, "\n") {
			data, ok := strings.CutPrefix(l, "data: ")
			if !ok {
				continue
			}
			var m struct {
				Method string
				Params struct {
					ProgressToken any
					Progress      float64
				}
				Result json.RawMessage
			}
			switch {
			case json.Unmarshal([]byte(data), &m) != nil:
				out = append(out, data)
			case m.Method == "notifications/progress":
				out = append(out, fmt.Sprintf("progress %v %g", m.Params.ProgressToken, m.Params.Progress))
			case m.Result != nil:
				out = append(out, "result")
			default:
				out = append(out, data)
			}
		}
	}
	return out
}

// TestE2EListenProgress: through bankdoor proxy --listen, with the Go
// SDK's streamable HTTP client, a list_accounts of the progress fixture
// carrying a progressToken is answered as text/event-stream: its five
// progress notifications, in order, then the result; 20 calls in 20. The
// client's progress handler gets all five, the GET stream none, and a
// denied transfer still gets its JSON-RPC error as application/json.
//
// With progress sent on the GET stream as before, each POST would be
// answered application/json holding the result alone (the check of the
// POST's events fails), the progress would be on the GET stream (the
// check of the GET stream fails), and a client that drops progress after
// the result, as the TS SDK does, would lose the last ones.
func TestE2EListenProgress(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture("BANK_FIXTURE_VARIANT=progress")
	tokens, toks := agentTokens(t)
	p := startListening(t, w, f, "--agent-tokens", tokens)
	ctx := testContext(t, time.Minute)

	hc := (&proxy.HTTPServer{URL: p.URL, Header: http.Header{"Authorization": {"Bearer " + toks["alice"]}}}).Client()
	rec := &wire{inner: hc.Transport}
	hc.Transport = rec
	progress := make(chan string, 64)
	client := mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- fmt.Sprintf("%v %g", r.Params.ProgressToken, r.Params.Progress)
		}})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: mcptest.ProtocolVersion})
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, p.Stderr())
	}

	const runs, steps = 20, 5
	for i := range runs {
		tok := fmt.Sprintf("run-%d", i)
		params := &mcp.CallToolParams{Name: "list_accounts", Arguments: map[string]any{}}
		params.SetProgressToken(tok)
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			t.Fatalf("run %d: list_accounts: %v %v", i, res, err)
		}
		var want []string
		for n := 1; n <= steps; n++ {
			want = append(want, fmt.Sprintf("progress %s %d", tok, n))
		}
		want = append(want, "result")
		ct, body := rec.answerTo(`"progressToken":"` + tok + `"`)
		if got := eventKinds(body); ct != "text/event-stream" || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("run %d: the POST was answered %q with %q; want text/event-stream with %q", i, ct, got, want)
		}
		for n := 1; n <= steps; n++ {
			select {
			case got := <-progress:
				if want := fmt.Sprintf("%s %d", tok, n); got != want {
					t.Errorf("run %d: the client's progress handler got %q, want %q", i, got, want)
				}
			case <-ctx.Done():
				t.Fatalf("run %d: progress %d never reached the client's handler", i, n)
			}
		}
	}

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount_cents": 1}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || !strings.Contains(we.Message, "name.write_word") {
		t.Errorf("transfer: %v, want denied with name.write_word", err)
	}
	if ct, body := rec.answerTo(`"name":"transfer"`); ct != "application/json" || !strings.Contains(body, "name.write_word") {
		t.Errorf("the denied transfer's POST was answered %q with %q; want application/json with the gate's error", ct, body)
	}
	cs.Close()
	stopListening(t, p)
	if get := rec.getStream(); strings.Contains(get, "notifications/progress") {
		t.Errorf("the GET stream carried progress notifications:\n%s", get)
	}
	if names, err := mcptest.Receipts(filepath.Join(w.receipts, "alice")); err != nil || len(names) != 1 {
		t.Errorf("alice's receipts: %q %v; want one, of the denied transfer", names, err)
	}
}
