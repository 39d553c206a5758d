package report

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
)

// witnessName is the key name of the report's omniwitness.
const witnessName = "witness.report.bankdoor.invalid"

// Anchoring appends one receipt at a time to a fresh log and, after each,
// times anchor.Anchorer.Anchor of the new checkpoint against a real
// omniwitness (the binary omniwitness, listening on 127.0.0.1 with a new
// key and SQLite file): consistency proof, add-checkpoint, cosignature
// check and store. Each cosigned checkpoint must then satisfy a policy
// of the log key and the witness key with quorum 1.
func (lb *LedgerBench) Anchoring(ctx context.Context, omniwitness string, n int) (Measurement, error) {
	lb.progress("anchor: %d checkpoints cosigned by a real omniwitness", n)
	bl, err := openLog(lb.Dir, "anchor", 0)
	if err != nil {
		return Measurement{}, err
	}
	defer bl.Close()
	wskey, wvkey, err := witnessKey()
	if err != nil {
		return Measurement{}, err
	}
	url, stop, err := startOmniwitness(ctx, omniwitness, filepath.Join(lb.Dir, "witness"), wskey, bl.vkey)
	if err != nil {
		return Measurement{}, err
	}
	defer stop()
	lat, err := anchorEach(ctx, bl, url, wvkey, n, lb.Progress)
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{ID: "anchor-omniwitness", Section: "anchor", What: "new checkpoint to a verified, stored omniwitness cosignature (tlog-witness over loopback HTTP)",
		Status: StatusMeasured, Unit: "ms", N: len(lat), Dist: Distribution(lat, time.Millisecond)}, nil
}

func anchorEach(ctx context.Context, bl *benchLog, url, wvkey string, n int, progress io.Writer) ([]time.Duration, error) {
	client, err := tlogwitness.New(url, wvkey)
	if err != nil {
		return nil, err
	}
	store := anchortest.NewMemStore()
	quiet := slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client.Logger = quiet
	a, err := anchor.New(anchor.Options{Log: bl.Log, LogKey: bl.verifier, Store: store, Witnesses: []*tlogwitness.Client{client}, Logger: quiet})
	if err != nil {
		return nil, err
	}
	policy, err := cosignature.NewPolicy(bl.vkey, []string{wvkey}, 1)
	if err != nil {
		return nil, err
	}
	as, err := bl.agents(1)
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		r, err := as[0].next()
		if err == nil {
			_, err = bl.Append(ctx, [][]byte{r})
		}
		if err != nil {
			return nil, err
		}
		cp := bl.Checkpoint()
		start := time.Now()
		if err := a.Anchor(ctx, cp); err != nil {
			return nil, fmt.Errorf("anchoring checkpoint of size %d: %w", bl.Size(), err)
		}
		lat = append(lat, time.Since(start))
		cosigned, err := anchor.Cosigned(cp, bl.verifier, store)
		if err == nil {
			_, err = policy.Verify(cosigned)
		}
		if err != nil {
			return nil, fmt.Errorf("cosigned checkpoint of size %d: %w", bl.Size(), err)
		}
	}
	return lat, nil
}

// witnessKey returns a new Ed25519 note key for the witness and its
// cosignature/v1 verifier key.
func witnessKey() (skey, vkey string, err error) {
	skey, vkey, err = note.GenerateKey(rand.Reader, witnessName)
	if err != nil {
		return "", "", err
	}
	vkey, err = fnote.VKeyToCosignatureV1(vkey)
	return skey, vkey, err
}

// startOmniwitness runs omniwitness in dir, witnessing the log whose
// verifier key is logVKey, and returns its URL once it listens.
func startOmniwitness(ctx context.Context, bin, dir, skey, logVKey string) (string, func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	origin, _, _ := strings.Cut(logVKey, "+")
	logs := fmt.Sprintf("Logs:\n  - Origin: %q\n    PublicKey: %q\n", origin, logVKey)
	if err := os.WriteFile(filepath.Join(dir, "witness.key"), []byte(skey), 0o600); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "logs.yaml"), []byte(logs), 0o600); err != nil {
		return "", nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--listen", addr, "--metrics_listen", "",
		"--private_key_path", filepath.Join(dir, "witness.key"),
		"--additional_logs", filepath.Join(dir, "logs.yaml"),
		"--db_file", filepath.Join(dir, "witness.db"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting omniwitness %s: %w", bin, err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "http://" + addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("omniwitness did not listen on %s within 20s:\n%s", addr, out.String())
		}
	}
}

// freeAddr returns a 127.0.0.1 address whose port was free just now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
