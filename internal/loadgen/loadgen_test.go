package loadgen_test

import (
	"crypto/sha256"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/loadgen"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/tesseralog"
)

// TestBothTargets drives the real `bankdoor ledger serve` and the real
// Tessera POSIX log with the same small load and checks what Run
// promises: every acknowledged entry has an index of its own below the
// size of a signed checkpoint, each log holds exactly the acknowledged
// entries, and every figure was taken.
func TestBothTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bankdoor and the tessera log and loads each for seconds; skipped in -short mode")
	}
	const writers = 16
	cfg := loadgen.Config{Writers: writers, Duration: 1500 * time.Millisecond}
	bins := t.TempDir()
	bankdoor, err := mcptest.BuildBankdoor(t.Context(), bins)
	if err != nil {
		t.Fatal(err)
	}
	tessera := bins + "/tessera-posix"
	if err := tesseralog.Build(t.Context(), "", tessera); err != nil {
		t.Fatal(err)
	}
	size, err := loadgen.ReceiptSize()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("bankdoor", func(t *testing.T) {
		b, err := loadgen.StartBankdoor(bankdoor, t.TempDir(), "loadgen.test/bankdoor", writers)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Stop()
		const presigned = 2
		if err := b.Presign(presigned); err != nil {
			t.Fatal(err)
		}
		res, err := loadgen.Run(t.Context(), b, cfg)
		if err != nil {
			t.Fatalf("%v\n%s", err, b.Output())
		}
		check(t, res, b, writers)
		// Each writer sends its presigned receipts first, then signs: the
		// acknowledged entries not signed live are at most the presigned.
		if live := b.Live(); live <= 0 || res.Acked-live > writers*presigned || res.Acked-live < writers {
			t.Errorf("%d acknowledged, %d signed while the clock ran; want every writer to send its %d presigned receipts first and sign the rest", res.Acked, live, presigned)
		}
	})
	t.Run("tessera", func(t *testing.T) {
		l, err := tesseralog.Start(tessera, t.TempDir(), "loadgen.test/tessera")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Stop()
		tt, err := loadgen.NewTessera(l, size, writers)
		if err != nil {
			t.Fatal(err)
		}
		defer tt.Close()
		res, err := loadgen.Run(t.Context(), tt, cfg)
		if err != nil {
			t.Fatalf("%v\n%s", err, l.Output())
		}
		check(t, res, tt, writers)
	})
}

// check holds a run's result to what Run promises for a fresh log that
// only the run wrote to.
func check(t *testing.T, res loadgen.Result, target loadgen.Target, writers int) {
	t.Helper()
	t.Logf("%s: %d writers, %d acknowledged in %v (%.0f/s), server CPU %v per entry, checkpoint latency p50 %v max %v",
		res.Target, res.Writers, res.Acked, res.Elapsed, res.Rate(), res.CPUPerEntry(), res.Latency[len(res.Latency)/2], res.Latency[len(res.Latency)-1])
	if res.Acked < writers {
		t.Errorf("%d entries acknowledged, want at least one per writer (%d)", res.Acked, writers)
	}
	// A fresh log holding only the acknowledged entries, each with an
	// index of its own, has them at 0 .. Acked-1.
	if res.MaxIndex+1 != uint64(res.Acked) {
		t.Errorf("largest index acknowledged %d, want %d for %d entries", res.MaxIndex, res.Acked-1, res.Acked)
	}
	if res.Size != uint64(res.Acked) {
		t.Errorf("first covering checkpoint has size %d, want the %d acknowledged entries", res.Size, res.Acked)
	}
	now, err := target.CheckpointSize(t.Context())
	if err != nil || now != uint64(res.Acked) {
		t.Errorf("log's checkpoint size after the run %d, %v; want the %d acknowledged entries", now, err, res.Acked)
	}
	if len(res.Latency) != res.Acked || res.Latency[0] <= 0 {
		t.Errorf("%d latencies, the least %v; want one positive latency per acknowledged entry (%d)", len(res.Latency), res.Latency[0], res.Acked)
	}
	if res.CPU <= 0 || res.LoadCPU <= 0 {
		t.Errorf("server CPU %v and load generator CPU %v over the run, want some of each", res.CPU, res.LoadCPU)
	}
}

// TestCPUTime: the CPU time of this process grows as it works, and a
// process that does not exist is an error.
func TestCPUTime(t *testing.T) {
	before, err := loadgen.CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Hash until getrusage(2) says this process used 100 ms more CPU (by
	// CPU time, not wall time, so a busy machine cannot shorten it).
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	sum := sha256.Sum256(nil)
	for start := used(); used()-start < 100*time.Millisecond; {
		for range 1000 {
			sum = sha256.Sum256(sum[:])
		}
	}
	after, err := loadgen.CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 50*time.Millisecond {
		t.Errorf("CPU time in /proc grew by %v while getrusage counted 100 ms of hashing, want at least 50 ms", after-before)
	}
	if _, err := loadgen.CPUTime(1 << 30); err == nil || !strings.Contains(err.Error(), "/proc/") {
		t.Errorf("CPUTime of no process = %v, want an error naming /proc", err)
	}
}

// TestRunRefusesNoLoad: no writers or no time is refused before anything
// is started.
func TestRunRefusesNoLoad(t *testing.T) {
	for _, c := range []loadgen.Config{{Writers: 0, Duration: time.Second}, {Writers: 1}} {
		if _, err := loadgen.Run(t.Context(), nil, c); err == nil {
			t.Errorf("Run with %+v: no error", c)
		}
	}
}
