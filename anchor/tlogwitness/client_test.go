package tlogwitness_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// answer is one scripted witness response; cosign means "200 with a real
// cosignature by key over the checkpoint received".
type answer struct {
	status      int
	contentType string
	body        string
	cosign      string // witness signer key
	location    string
}

// fakeWitness replays answers in order and records the requests.
type fakeWitness struct {
	mu      sync.Mutex
	answers []answer
	bodies  [][]byte
	paths   []string
}

func (f *fakeWitness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies, f.paths = append(f.bodies, body), append(f.paths, r.Method+" "+r.URL.Path)
	a := f.answers[min(len(f.bodies), len(f.answers))-1]
	f.mu.Unlock()
	if a.cosign != "" {
		_, _ = w.Write(cosign(body, a.cosign))
		return
	}
	if a.contentType != "" {
		w.Header().Set("Content-Type", a.contentType)
	}
	if a.location != "" {
		w.Header().Set("Location", a.location)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (f *fakeWitness) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// cosign signs the checkpoint at the end of an add-checkpoint body.
func cosign(body []byte, skey string) []byte {
	_, cp, _ := bytes.Cut(body, []byte("\n\n"))
	text, _, _ := bytes.Cut(cp, []byte("\n\n"))
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		panic(err)
	}
	signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, s)
	if err != nil {
		panic(err)
	}
	return signed[len(text)+2:]
}

type env struct {
	fake           *fakeWitness
	client         *tlogwitness.Client
	cp             []byte
	wSkey, wVKey   string
	otherWitnessSk string
}

func newEnv(t *testing.T, answers ...answer) *env {
	e := &env{fake: &fakeWitness{answers: answers}}
	e.wSkey, e.wVKey = testlog.NewWitnessKey(t, "witness.test")
	e.otherWitnessSk, _ = testlog.NewWitnessKey(t, "witness.test")
	for i := range e.fake.answers {
		if e.fake.answers[i].cosign == "self" {
			e.fake.answers[i].cosign = e.wSkey
		}
	}
	srv := httptest.NewServer(e.fake)
	t.Cleanup(srv.Close)
	c, err := tlogwitness.New(srv.URL+"/prefix/", e.wVKey)
	if err != nil {
		t.Fatal(err)
	}
	c.Backoff = tlogwitness.Backoff{Attempts: 3, Initial: time.Millisecond, Max: 2 * time.Millisecond}
	c.Logger = slog.New(slog.DiscardHandler)
	e.client = c
	skey, _ := testlog.NewKey(t, "bankdoor.test/ledger")
	l := testlog.New(t, skey)
	l.Append("receipt", 3)
	e.cp = l.Checkpoint()
	return e
}

func TestRequestFormat(t *testing.T) {
	e := newEnv(t, answer{cosign: "self"})
	proof := [][]byte{bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)}
	lines, err := e.client.AddCheckpoint(context.Background(), 2, proof, e.cp)
	if err != nil {
		t.Fatal(err)
	}
	want := "old 2\n" + base64.StdEncoding.EncodeToString(proof[0]) + "\n" + base64.StdEncoding.EncodeToString(proof[1]) + "\n\n" + string(e.cp)
	if got := string(e.fake.bodies[0]); got != want {
		t.Errorf("request body =\n%q\nwant\n%q", got, want)
	}
	if got := e.fake.paths[0]; got != "POST /prefix/add-checkpoint" {
		t.Errorf("request = %q; want POST /prefix/add-checkpoint", got)
	}
	v, _ := cosignature.NewWitnessVerifier(e.wVKey)
	if _, err := cosignature.Verify(e.cp, lines, v); err != nil {
		t.Errorf("returned lines %q do not verify: %v", lines, err)
	}
}

func TestBadCosignatureRefused(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name string
		a    answer
		want error
	}{
		{"signed by another key with the same name", answer{cosign: e.otherWitnessSk}, cosignature.ErrNoCosignature},
		{"a line with another key hash", answer{status: 200, body: "— witness.test AAAAAAAA\n"}, cosignature.ErrNoCosignature},
		{"not signature lines", answer{status: 200, body: "OK\n"}, cosignature.ErrMalformed},
		{"empty", answer{status: 200}, cosignature.ErrMalformed},
		{"forged", answer{status: 200, body: forge(cosign(append([]byte("old 0\n\n"), e.cp...), e.wSkey))}, cosignature.ErrBadCosignature},
	} {
		e.fake.answers = []answer{c.a}
		if _, err := e.client.AddCheckpoint(context.Background(), 0, nil, e.cp); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v; want %v", c.name, err, c.want)
		}
	}
}

// forge flips bits of the signature at the end of a cosignature line.
func forge(line []byte) string {
	s := []byte(strings.TrimSuffix(string(line), "\n"))
	i := len(s) - 4 // inside the Ed25519 signature, before any padding
	if s[i] == 'A' {
		s[i] = 'B'
	} else {
		s[i] = 'A'
	}
	return string(s) + "\n"
}

func TestConflict(t *testing.T) {
	e := newEnv(t, answer{status: 409, contentType: "text/x.tlog.size", body: "7\n"})
	_, err := e.client.AddCheckpoint(context.Background(), 0, nil, e.cp)
	var conflict *tlogwitness.ConflictError
	if !errors.As(err, &conflict) || conflict.Size != 7 {
		t.Fatalf("err = %v; want a ConflictError with size 7", err)
	}
	for _, c := range []struct {
		a    answer
		want error
	}{
		{answer{status: 409, contentType: "text/x.tlog.size", body: "seven\n"}, tlogwitness.ErrRefused},
		{answer{status: 409, contentType: "text/x.tlog.size", body: "-1\n"}, tlogwitness.ErrRefused},
		{answer{status: 409, body: "roots differ"}, tlogwitness.ErrInconsistent}, // no size: older witnesses' root mismatch
	} {
		e.fake.answers = []answer{c.a}
		_, err := e.client.AddCheckpoint(context.Background(), 0, nil, e.cp)
		if !errors.Is(err, c.want) || errors.As(err, &conflict) {
			t.Errorf("409 %q %q: err = %v; want %v", c.a.contentType, c.a.body, err, c.want)
		}
	}
}

func TestRefusalsAreReportedWithTheWitnessWords(t *testing.T) {
	for _, c := range []struct {
		a    answer
		want error
	}{
		{answer{status: 404, body: "unknown origin bankdoor.test/ledger"}, tlogwitness.ErrUnknownLog},
		{answer{status: 403, body: "no signature by a trusted key"}, tlogwitness.ErrLogKey},
		{answer{status: 400, body: "old size larger than checkpoint"}, tlogwitness.ErrBadRequest},
		{answer{status: 422, body: "consistency proof invalid"}, tlogwitness.ErrInconsistent},
		{answer{status: 418, body: "teapot"}, tlogwitness.ErrRefused},
		{answer{status: 302, location: "/elsewhere", body: "moved"}, tlogwitness.ErrRefused},
	} {
		e := newEnv(t, c.a)
		_, err := e.client.AddCheckpoint(context.Background(), 0, nil, e.cp)
		var refused *tlogwitness.RefusedError
		if !errors.Is(err, c.want) || !errors.As(err, &refused) || refused.Status != c.a.status ||
			!strings.Contains(err.Error(), c.a.body) || !strings.Contains(err.Error(), "witness.test") {
			t.Errorf("HTTP %d %q: err = %v; want %v naming the witness and quoting its words", c.a.status, c.a.body, err, c.want)
		}
		if n := e.fake.requests(); n != 1 {
			t.Errorf("HTTP %d: %d requests; a refusal must not be retried", c.a.status, n)
		}
	}
}

func TestRetries(t *testing.T) {
	e := newEnv(t, answer{status: 503}, answer{status: 429}, answer{cosign: "self"})
	if _, err := e.client.AddCheckpoint(context.Background(), 0, nil, e.cp); err != nil {
		t.Fatalf("503, 429, then a cosignature: %v", err)
	}
	if n := e.fake.requests(); n != 3 {
		t.Errorf("%d requests; want 3", n)
	}
	e = newEnv(t, answer{status: 500, body: "database down"})
	_, err := e.client.AddCheckpoint(context.Background(), 0, nil, e.cp)
	if !errors.Is(err, tlogwitness.ErrUnavailable) || !strings.Contains(err.Error(), "database down") {
		t.Errorf("always 500: err = %v; want ErrUnavailable quoting the witness", err)
	}
	if n := e.fake.requests(); n != 3 {
		t.Errorf("always 500: %d requests; want Backoff.Attempts = 3", n)
	}
}

func TestNetworkErrorsAreBounded(t *testing.T) {
	e := newEnv(t)
	e.client.URL.Host = "127.0.0.1:1" // nothing listens on port 1
	start := time.Now()
	_, err := e.client.AddCheckpoint(context.Background(), 0, nil, e.cp)
	if !errors.Is(err, tlogwitness.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Errorf("unreachable witness: err = %v after %v; want ErrUnavailable, promptly", err, time.Since(start))
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	e := newEnv(t, answer{status: 503})
	e.client.Backoff = tlogwitness.Backoff{Attempts: 10, Initial: time.Hour, Max: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.client.AddCheckpoint(ctx, 0, nil, e.cp); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v; want the context's deadline", err)
	}
}

func TestTooManyProofLines(t *testing.T) {
	e := newEnv(t, answer{cosign: "self"})
	proof := make([][]byte, 64)
	if _, err := e.client.AddCheckpoint(context.Background(), 1, proof, e.cp); err == nil || e.fake.requests() != 0 {
		t.Errorf("64 proof lines: err = %v, %d requests; want an error and no request", err, e.fake.requests())
	}
}

func TestNewRejects(t *testing.T) {
	_, vkey := testlog.NewWitnessKey(t, "witness.test")
	for _, c := range []struct{ url, vkey string }{
		{"witness.test/", vkey},
		{"ftp://witness.test/", vkey},
		{"https://witness.test/", "witness.test+00000000+AAAA"},
	} {
		if _, err := tlogwitness.New(c.url, c.vkey); err == nil {
			t.Errorf("New(%q, %q) succeeded; want an error", c.url, c.vkey)
		}
	}
}
