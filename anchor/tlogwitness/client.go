// Package tlogwitness is a client for the add-checkpoint endpoint of the C2SP
// tlog-witness protocol (https://c2sp.org/tlog-witness): it asks a witness to
// cosign a log checkpoint and checks the cosignature it returns.
//
// # Request
//
// POST <witness URL>/add-checkpoint with the body
//
//	old <size the witness last cosigned, decimal>\n
//	<consistency proof hash, base64>\n   (zero or more, at most 63)
//	\n
//	<the checkpoint: a signed note (https://c2sp.org/tlog-checkpoint)>
//
// For example, the witness last cosigned size 2 and the log is now at size 3
// (the consistency proof from 2 to 3 is one hash):
//
//	old 2
//	UCUNgUAV5NIH9PLnByvvYkXzDeRUbp+/tQfWOdDLHvM=
//
//	bankdoor.example/ledger
//	3
//	qdtHs0Ej/GnuFYt6mGfczLAqFIJYX5qxBCABgprMwQ4=
//
//	— bankdoor.example/ledger 61Au/x6Ln5uAj0dsuc2hYudD58Qr7nSOrwm4QmEB/H7xNY7qmJ70sc+hBcrXo0FmxJX9ECXfALjd5mnMThP+3oxhKgw=
//
// and the witness answers 200 with its cosignature line:
//
//	— witness.example Ni3uBQAAAABrERu2CJ1Bv4LlXh/CI+K+wFdmLzG0hqVVennmYou21l1cE5WjKLPdB9izxtfM2hiYGGsoNG056ljWwUrBZUgzXxY5Dg==
//
// # Responses
//
//   - 200 OK: the body is one or more note signature lines ("— name base64\n")
//     by the witness's keys. AddCheckpoint returns the lines by the configured
//     key after checking each verifies over the exact checkpoint sent
//     (C2SP tlog-cosignature, cosignature/v1, Ed25519 or ML-DSA-44); any
//     other answer is an error.
//   - 409 Conflict with Content-Type text/x.tlog.size: the old size is not the
//     size the witness last cosigned; the body is that size. AddCheckpoint
//     returns a *ConflictError carrying it, so that the caller can send a
//     consistency proof from that size instead.
//   - 404 (unknown origin), 403 (no valid signature by the log key the witness
//     trusts), 400 (old size larger than the checkpoint, or bad body), 422
//     (invalid consistency proof, or a different root hash for a size already
//     cosigned): a *RefusedError with the status, the witness's own words and
//     the kind (ErrUnknownLog, ErrLogKey, ErrBadRequest, ErrInconsistent).
//   - 429, 5xx and network errors are retried with exponential backoff, a
//     bounded number of times, then reported as ErrUnavailable.
//
// github.com/transparency-dev/witness/client/http speaks the same protocol,
// but it discards the body of a refusal, which the witness's operator may
// have written for us; this client keeps it. The error kinds mirror that
// package's (witness.ErrUnknownLog, ErrNoValidSignature, ...).
package tlogwitness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"golang.org/x/mod/sumdb/note"
)

// Error kinds. A *RefusedError unwraps to one of them.
var (
	ErrUnknownLog   = errors.New("the witness does not know this log's origin (404)")
	ErrLogKey       = errors.New("the witness found no valid signature by the log key it trusts for this origin (403)")
	ErrBadRequest   = errors.New("the witness rejected the request (400)")
	ErrInconsistent = errors.New("the witness refuses the checkpoint as inconsistent with the one it cosigned before (422)")
	ErrRefused      = errors.New("the witness refused the checkpoint")
	ErrUnavailable  = errors.New("the witness did not answer (network error, 429 or 5xx)")
)

// maxProofLines is the protocol's limit on consistency proof lines.
const maxProofLines = 63

// maxResponse caps what is read of a witness's answer.
const maxResponse = 64 << 10

// ConflictError is a 409 answer: the witness last cosigned a checkpoint of
// Size, not of the old size sent.
type ConflictError struct {
	Witness string
	Size    uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("witness %s: 409 conflict: its latest cosigned size is %d; resend with a consistency proof from %d", e.Witness, e.Size, e.Size)
}

// RefusedError is any other answer that is not a cosignature.
type RefusedError struct {
	Witness string // the witness key's name
	URL     string
	Status  int    // HTTP status; 0 if the request never got an answer
	Body    string // the witness's own words, trimmed; may be empty
	Kind    error  // one of the Err* kinds above
}

func (e *RefusedError) Error() string {
	words := "no explanation in the body"
	if e.Body != "" {
		words = fmt.Sprintf("it said %q", e.Body)
	}
	return fmt.Sprintf("witness %s (%s): %v: HTTP %d, %s", e.Witness, e.URL, e.Kind, e.Status, words)
}

func (e *RefusedError) Unwrap() error { return e.Kind }

// Backoff bounds the retries of network errors, 429 and 5xx answers.
type Backoff struct {
	Attempts int           // total tries, at least 1
	Initial  time.Duration // wait before the second try; doubles each time
	Max      time.Duration // longest wait
}

// DefaultBackoff tries 5 times over about 8 seconds.
var DefaultBackoff = Backoff{Attempts: 5, Initial: 500 * time.Millisecond, Max: 4 * time.Second}

// Client talks to one witness. Its fields must not change once in use.
type Client struct {
	URL     *url.URL      // the witness's base URL; requests go to URL + "/add-checkpoint"
	Key     note.Verifier // the witness's cosignature/v1 verifier
	HTTP    *http.Client  // nil means http.DefaultClient
	Backoff Backoff
	Logger  *slog.Logger // nil means slog.Default()
}

// New returns a client for the witness at rawURL whose cosignatures verify
// with vkey (see cosignature.NewWitnessVerifier).
func New(rawURL, vkey string) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("witness URL %q: want an absolute http(s) URL, the prefix before /add-checkpoint", rawURL)
	}
	key, err := cosignature.NewWitnessVerifier(vkey)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{
		Timeout: 30 * time.Second,
		// A redirect would turn the POST into a GET elsewhere; report it instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Client{URL: u, Key: key, HTTP: hc, Backoff: DefaultBackoff}, nil
}

// Name is the witness key's name; it identifies the witness in errors and
// in the anchor's store.
func (c *Client) Name() string { return c.Key.Name() }

// AddCheckpoint asks the witness to cosign checkpoint, given the size it last
// cosigned (0 if never) and the consistency proof from that size. It returns
// the witness's cosignature line(s) by c.Key, verified over checkpoint.
// A 409 answer is a *ConflictError; a refusal is a *RefusedError.
func (c *Client) AddCheckpoint(ctx context.Context, oldSize uint64, proof [][]byte, checkpoint []byte) ([]byte, error) {
	if len(proof) > maxProofLines {
		return nil, fmt.Errorf("consistency proof has %d hashes, the protocol allows %d", len(proof), maxProofLines)
	}
	body := requestBody(oldSize, proof, checkpoint)
	for attempt := 1; ; attempt++ {
		lines, err := c.post(ctx, body)
		if err == nil {
			return c.verify(checkpoint, lines)
		}
		if !errors.Is(err, ErrUnavailable) || attempt >= c.Backoff.Attempts {
			return nil, err
		}
		c.logger().WarnContext(ctx, "witness unavailable, will retry", "witness", c.Name(), "attempt", attempt, "err", err)
		if err := sleep(ctx, c.Backoff.wait(attempt)); err != nil {
			return nil, err
		}
	}
}

// verify checks the 200 answer's cosignature lines over checkpoint.
func (c *Client) verify(checkpoint, lines []byte) ([]byte, error) {
	sig, err := cosignature.Verify(checkpoint, lines, c.Key)
	if err != nil {
		return nil, fmt.Errorf("witness %s (%s) answered 200 without a valid cosignature, refused: %w", c.Name(), c.URL, err)
	}
	return sig, nil
}

// requestBody formats the add-checkpoint request body.
func requestBody(oldSize uint64, proof [][]byte, checkpoint []byte) []byte {
	b := fmt.Appendf(nil, "old %d\n", oldSize)
	for _, h := range proof {
		b = base64.StdEncoding.AppendEncode(b, h)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	return append(b, checkpoint...)
}

// post sends one request and classifies the answer.
func (c *Client) post(ctx context.Context, body []byte) ([]byte, error) {
	u := c.URL.JoinPath("add-checkpoint").String()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("witness %s: %v", c.Name(), err)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &RefusedError{Witness: c.Name(), URL: u, Body: err.Error(), Kind: ErrUnavailable}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, &RefusedError{Witness: c.Name(), URL: u, Status: resp.StatusCode, Body: err.Error(), Kind: ErrUnavailable}
	}
	if resp.StatusCode == http.StatusOK {
		return answer, nil
	}
	if resp.StatusCode == http.StatusConflict && resp.Header.Get("Content-Type") == "text/x.tlog.size" {
		return nil, c.conflict(u, answer)
	}
	return nil, &RefusedError{Witness: c.Name(), URL: u, Status: resp.StatusCode, Body: words(answer), Kind: kind(resp.StatusCode)}
}

// conflict parses a 409 body: the witness's latest size in decimal.
func (c *Client) conflict(u string, answer []byte) error {
	size, err := strconv.ParseUint(strings.TrimSuffix(string(answer), "\n"), 10, 64)
	if err != nil {
		return &RefusedError{Witness: c.Name(), URL: u, Status: http.StatusConflict, Body: words(answer),
			Kind: fmt.Errorf("%w: a 409 text/x.tlog.size answer whose body is not a decimal size", ErrRefused)}
	}
	return &ConflictError{Witness: c.Name(), Size: size}
}

// kind maps a refusal status to an error kind.
func kind(status int) error {
	switch {
	case status == http.StatusNotFound:
		return ErrUnknownLog
	case status == http.StatusForbidden:
		return ErrLogKey
	case status == http.StatusBadRequest:
		return ErrBadRequest
	case status == http.StatusUnprocessableEntity, status == http.StatusConflict:
		// A 409 without a size is how older witnesses said "root mismatch".
		return ErrInconsistent
	case status == http.StatusTooManyRequests, status >= 500:
		return ErrUnavailable
	}
	return ErrRefused
}

// words returns the start of a witness's answer as printable text.
func words(b []byte) string {
	const max = 512
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// wait returns the backoff before try attempt+1, with up to 25% jitter.
func (b Backoff) wait(attempt int) time.Duration {
	d := b.Initial
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if d <= 0 {
		return 0
	}
	return d - rand.N(d/4+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}
