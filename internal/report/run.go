package report

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/pgtest"
	"github.com/bankdoor/bankdoor/verifier"
)

// SettingsFor returns the sizes of a mode: "quick" (CI), "default" or
// "full" (1M-leaf log).
func SettingsFor(mode string) Settings {
	switch mode {
	case "quick":
		return Settings{Mode: mode, Calls: 50, Appends: 512, AppendsWide: 4096, SingleTx: 64, CheckpointN: 200, ProofSizes: []uint64{1000}, Proofs: 200, VerifyFiles: 500, VerifyBundle: 500, Anchors: 20,
			ProcsDenies: 80, TakeoverRounds: 3, SideBySideWriters: 256, SideBySideSeconds: 3, SideBySideRounds: 0}
	case "full":
		return Settings{Mode: mode, Calls: 1000, Appends: 16384, AppendsWide: 262_144, SingleTx: 1024, CheckpointN: 2000, ProofSizes: []uint64{10_000, 100_000, 1_000_000}, Proofs: 2000, VerifyFiles: 20_000, VerifyBundle: 20_000, Anchors: 200,
			ProcsDenies: 1600, TakeoverRounds: 10, SideBySideWriters: 1024, SideBySideSeconds: 30, SideBySideRounds: 3}
	}
	return Settings{Mode: "default", Calls: 400, Appends: 4096, AppendsWide: 65_536, SingleTx: 256, CheckpointN: 1000, ProofSizes: []uint64{10_000, 100_000}, Proofs: 1000, VerifyFiles: 5000, VerifyBundle: 5000, Anchors: 100,
		ProcsDenies: 400, TakeoverRounds: 5, SideBySideWriters: 1024, SideBySideSeconds: 30, SideBySideRounds: 2}
}

// Witness is the omniwitness binary for the anchoring measurement, or
// why there is none (Skipped, shown as "not measured: " + Skipped).
type Witness struct {
	Bin     string
	Skipped string
}

// Run runs every measurement and returns the report. A measurement that
// fails becomes a row with status "failed: ..." (and fails its claim);
// the error is for a run that could not produce a report at all.
func Run(ctx context.Context, s Settings, b *Bench, root string, w Witness) (*Report, error) {
	start := time.Now()
	r := &Report{Schema: Schema, Date: start.UTC().Truncate(time.Second), Machine: machine(), Go: runtime.Version(),
		Commit: commit(ctx, root), Settings: s, Limits: limits}
	var err error
	if r.Attacks, err = b.Attacks(ctx); err != nil {
		return nil, fmt.Errorf("attack run: %w", err)
	}
	r.Measurements = append(r.Measurements, attackReceipts(b, len(r.Attacks)))
	if r.Controls, err = b.Controls(ctx); err != nil {
		return nil, fmt.Errorf("control run: %w", err)
	}
	if r.RugPulls, err = b.RugPulls(ctx); err != nil {
		return nil, fmt.Errorf("rug-pull run: %w", err)
	}
	lat, chart, err := b.Latency(ctx, s.Calls)
	if err != nil {
		return nil, fmt.Errorf("latency run: %w", err)
	}
	r.Measurements, r.Chart = append(r.Measurements, lat...), chart
	r.Measurements = append(r.Measurements, b.Procs(ctx, s)...)
	r.Conformance = b.Conformance(ctx, s.Mode)
	lb := &LedgerBench{Dir: filepath.Join(b.Work, "ledger"), Progress: b.Progress}
	if err := os.MkdirAll(lb.Dir, 0o755); err != nil {
		return nil, err
	}
	r.Measurements = append(r.Measurements, ledgerRows(ctx, lb, s)...)
	r.Measurements = append(r.Measurements, postgresRows(ctx, lb, s, pgtest.Start)...)
	r.Measurements = append(r.Measurements, postgresRatio(r.Measurements))
	r.Measurements = append(r.Measurements, b.SideBySide(ctx, s)...)
	r.Settings.Anchor = w.Bin != ""
	al, err := lb.openAnchorLog(w)
	if err != nil {
		return nil, fmt.Errorf("anchoring log: %w", err)
	}
	defer al.Close()
	r.Measurements = append(r.Measurements, anchorRow(ctx, lb, al, w, s.Anchors))
	m, err := lb.VerifyThroughput(filepath.Join(b.Work, "verify", "receipts"), s.VerifyFiles)
	r.Measurements = append(r.Measurements, rowOrFailure(m, err, "verify-offline", "verify", "offline verification of a receipts directory"))
	r.Measurements = append(r.Measurements, lb.VerifyAnchored(ctx, al, filepath.Join(b.Work, "verify", "bundle"), s.VerifyBundle)...)
	r.Measurements = append(r.Measurements, budgetRows(ctx, lb, al, w, s.Mode)...)
	bound, c, all, cores, err := lb.Bound(ctx, s.Appends)
	r.Measurements = append(r.Measurements, rowOrFailure(bound, err, "ledger-bound", "ledger", "physical bound of durable appends on this machine"))
	r.Measurements = append(r.Measurements, boundRatios(r.Measurements, c, all, cores)...)
	r.Claims = Claims(r)
	r.Elapsed = time.Since(start).Round(time.Second).Seconds()
	return r, nil
}

// attackReceipts verifies the attack run's receipts as `bankdoor verify`
// does, with the proxy's public key only.
func attackReceipts(b *Bench, attacks int) Measurement {
	m := Measurement{ID: "attack-receipts", Section: "verify", What: "the attack run's receipts, verified offline with the public key and the policy's SHA-256 only"}
	pub, err := agentkey.LoadPublic(filepath.Join(b.Home, agentkey.PublicFile))
	var policy []byte
	if err == nil {
		policy, err = os.ReadFile(b.Policy)
	}
	if err == nil {
		var rep *verifier.Report
		sum := sha256.Sum256(policy)
		start := time.Now()
		rep, err = verifier.VerifyDir(b.AttackReceipts(), ed25519.PublicKey(pub), verifier.Options{PolicySHA256: hex.EncodeToString(sum[:])})
		if err == nil {
			m.Status, m.Unit, m.N, m.Value = StatusMeasured, "ms", len(rep.Receipts), float64(time.Since(start))/float64(time.Millisecond)
		}
	}
	if err != nil {
		m.Status = "failed: " + err.Error()
	}
	return m
}

func ledgerRows(ctx context.Context, lb *LedgerBench, s Settings) []Measurement {
	var ms []Measurement
	m, err := lb.Appends(ctx, "appends-batched", s.Appends, 0, 64, 1)
	ms = append(ms, rowOrFailure(m, err, "appends-batched", "ledger", "durable appends, group commit"))
	if s.AppendsWide > 0 {
		m, err = lb.Appends(ctx, "appends-batched-1024", s.AppendsWide, 0, 1024, 1)
		ms = append(ms, rowOrFailure(m, err, "appends-batched-1024", "ledger", "durable appends, group commit, 1024 agents"))
	}
	m, err = lb.Appends(ctx, "appends-single-tx", s.SingleTx, 1, 64, 1)
	ms = append(ms, rowOrFailure(m, err, "appends-single-tx", "ledger", "durable appends, one receipt per transaction"))
	m, err = lb.CheckpointLatency(ctx, s.CheckpointN)
	ms = append(ms, rowOrFailure(m, err, "checkpoint-latency", "ledger", "time to a covering checkpoint"))
	proofs, err := lb.Proofs(ctx, s.ProofSizes, s.Proofs)
	if err != nil {
		proofs = append(proofs, rowOrFailure(Measurement{}, err, "inclusion-proof", "ledger", "inclusion proofs"))
	}
	ms = append(ms, proofs...)
	if len(s.ProofSizes) > 0 {
		reads, err := lb.TileReads(ctx, s.ProofSizes[0], s.Proofs)
		if err != nil {
			reads = []Measurement{rowOrFailure(Measurement{}, err, tilesReadID, "ledger", "tlog-tiles reads")}
		}
		ms = append(ms, reads...)
	}
	return ms
}

// postgresRows measures the ledger on PostgreSQL as ledgerRows does on
// bbolt: group commit with one and two ledger servers, the covering
// checkpoint and inclusion proofs at the largest of s.ProofSizes. The
// server is one of its own, from start (pgtest.Start: Debian's
// PostgreSQL on loopback), stopped before postgresRows returns; if it
// does not start, every row fails with the reason.
func postgresRows(ctx context.Context, lb *LedgerBench, s Settings, start func(logf func(string, ...any)) (*pgtest.Server, error)) []Measurement {
	pb := *lb
	srv, startErr := start(pb.progress)
	note := ""
	if startErr != nil {
		startErr = fmt.Errorf("starting PostgreSQL: %w", startErr)
		pb.Postgres = func() (pgtest.DB, error) { return pgtest.DB{}, startErr }
	} else {
		defer func() {
			if err := srv.Stop(); err != nil {
				pb.progress("stopping PostgreSQL: %v", err)
			}
		}()
		pb.Postgres, note = srv.NewDatabase, "PostgreSQL "+srv.Version()+" on 127.0.0.1"
	}
	ids := []string{pb.id("appends-batched"), pb.id("appends-batched") + "-2", pb.id("checkpoint-latency")}
	m, err := pb.Appends(ctx, ids[0], s.Appends, 0, 64, 1)
	ms := []Measurement{rowOrFailure(m, err, ids[0], "postgres", "durable appends, group commit, PostgreSQL")}
	m, err = pb.Appends(ctx, ids[1], s.Appends, 0, 64, 2)
	ms = append(ms, rowOrFailure(m, err, ids[1], "postgres", "durable appends, group commit, 2 ledger servers on one PostgreSQL database"))
	m, err = pb.CheckpointLatency(ctx, s.CheckpointN)
	ms = append(ms, rowOrFailure(m, err, ids[2], "postgres", "time to a covering checkpoint, PostgreSQL"))
	if len(s.ProofSizes) > 0 {
		size := slices.Max(s.ProofSizes)
		m, err = pb.ProofsAt(ctx, size, s.Proofs)
		ms = append(ms, rowOrFailure(m, err, fmt.Sprintf("%s-%d", pb.id("inclusion-proof"), size), "postgres", "inclusion proofs, PostgreSQL"))
	}
	for i := range ms {
		if ms[i].Status == StatusMeasured {
			ms[i].Note = strings.TrimPrefix(ms[i].Note+"; "+note, "; ")
		}
	}
	return ms
}

// postgresRatioID is the row of group commit on PostgreSQL over bbolt.
const postgresRatioID = "appends-batched-postgres-of-bbolt"

// postgresRatio divides group commit on PostgreSQL (one ledger server) by
// group commit on bbolt, both from 64 agents in the same run.
func postgresRatio(ms []Measurement) Measurement {
	r := Measurement{ID: postgresRatioID, Section: "postgres",
		What: "group commit on PostgreSQL (one ledger server) over group commit on bbolt, 64 agents each, same run"}
	pg, ok1 := find(ms, "appends-batched"+backendSuffix)
	bolt, ok2 := find(ms, "appends-batched")
	if !ok1 || !ok2 || pg.Status != StatusMeasured || bolt.Status != StatusMeasured || bolt.Value <= 0 {
		r.Status = "not measured: needs measured appends-batched and appends-batched" + backendSuffix + " rows"
		return r
	}
	r.Status, r.Unit, r.N, r.Value = StatusMeasured, "× bbolt", pg.N, pg.Value/bolt.Value
	return r
}

func anchorRow(ctx context.Context, lb *LedgerBench, al *anchorLog, w Witness, n int) Measurement {
	const id, what = "anchor-omniwitness", "new checkpoint to a verified omniwitness cosignature"
	if w.Bin == "" {
		return Measurement{ID: id, Section: "anchor", What: what, Status: "not measured: " + w.Skipped}
	}
	m, err := lb.Anchoring(ctx, al, n)
	return rowOrFailure(m, err, id, "anchor", what)
}

func rowOrFailure(m Measurement, err error, id, section, what string) Measurement {
	if err == nil {
		return m
	}
	return Measurement{ID: id, Section: section, What: what, Status: "failed: " + err.Error()}
}

// machine describes the host: CPU model (Linux), cores, OS.
func machine() Machine {
	m := Machine{CPU: "unknown", Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.OS += ", kernel " + strings.TrimSpace(string(b))
	}
	return m
}

// commit returns the VCS revision the binary was built from (go build
// stamps it), else git's view of root, else "unknown".
func commit(ctx context.Context, root string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			if modified == "true" {
				rev += "+dirty"
			}
			return rev
		}
	}
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		rev += "+dirty"
	}
	return rev
}

// limits are what the report does not show.
var limits = []string{
	"One machine, one run: figures vary with the disk (every deny and every ledger batch is fsynced) and with load; compare the ratios measured in the same run rather than absolute times across machines.",
	"Latency is six MCP sessions (direct, proxied, deny over stdio pipes; the same three over streamable HTTP on 127.0.0.1), one call at a time, interleaved; no concurrent load. The fixture bank rewrites its whole state file on every call, which is part of both the direct and the proxied time and dominates it.",
	"Over HTTP the proxy is `proxy --listen` with one agent (bearer token) and the fixture behind it over `--url`; it has no ledger (with --listen receipts go only to a remote ledger, and none is given), where the stdio proxy embeds one. Its deny is still answered after the receipt is fsynced.",
	"The ledger figures run package ledger in process (the code the proxy embeds and `bankdoor ledger serve` runs), without the Connect RPC and network in front of it.",
	"The PostgreSQL rows run the same code on a PostgreSQL server the report starts for itself (package pgtest): Debian's postgresql-VERSION binaries (the newest installed, its version in each row's note; pgtest installs Debian's postgresql package if there is none), a fresh cluster on loopback TCP (127.0.0.1, SCRAM password) on this machine, beside the report, with fsync on and synchronous_commit on, max_connections 200 and shared_buffers 64MB, default settings otherwise; a new database per row. Two ledger servers are two Logs in the report's process on one database, each catching up under the database's writer lock, not two processes.",
	"The attack catalogue is what it is: an attack it does not contain is not measured here. The gate's guarantees hold for requests; responses, resources and prompts are not inspected, except answers that ask the user to act (-32042 URL elicitations, embedded requests), held to the expose list.",
	"The proxied latency includes the proxy's own tools/list after every answered call (the pin invariant, package proxy), asked for the moment the answer arrives; the timed agent sends its next call at once, so it waits for what is left of that listing. An agent that thinks between calls waits for none of it. The rug-pull matrix checks that a change is never called; it does not measure a server that behaves differently from what it lists, which no pin can see.",
	"The many-proxies rows run stdio proxies, each with its own fixture bank and SDK client, on this machine's cores: with more proxies than cores they measure contention for the CPU as well as for the receipts directory's lock (every receipt is written and fsynced under it). The takeover is timed from sending SIGKILL to reading the new holder's log line, so it includes the kernel releasing the dead holder's locks and the standby's retry interval.",
	"Peak memory is the Go heap sampled every millisecond, not the resident set of the process.",
	"The side-by-side with Tessera runs `bankdoor ledger serve` and Tessera's POSIX conformance log (cmd/conformance/posix, built from the module proxy at the version tools/tessera/go.mod pins) as they ship, on this machine with the load generator (package loadgen) beside them: its bankdoor writers send receipts signed before the clock starts (25,000 a second's worth; signing is the agent's work, on the agent's machine, and the row says how many a writer had to sign while the clock ran) as plain Connect-protocol POSTs built with net/http, as Tessera's writers build theirs, so that the load generator takes about as much of the machine from either log. Tessera's log batches up to 256 entries or 1 s and publishes a checkpoint at most once a second, as its conformance binary is configured (so with fewer than 256 writers each of its batches waits out the second: --quick runs 256); both logs' checkpoints are polled every 10 ms.",
	"Anchoring is measured with package anchor and one omniwitness on loopback, one checkpoint at a time; `bankdoor anchor` against a remote ledger is not measured. The budget rows run the anchoring loop (anchor.Anchorer.Run, woken by the ledger's Watch, as `ledger serve --witness` does) with one witness on loopback, so its answers take milliseconds; a public witness's round trip adds to every lag.",
	"The export bundle is made in process from the anchoring log with package verifier/bundle (the code `bankdoor export --ledger-db` runs, without the Connect RPC of `export --ledger`), and is verified with verifier.VerifyAnchored (what `verify --checkpoint` runs, without the command's flags and output); its export, which writes and syncs every file, is not timed. The truncation check deletes the newest receipts only; other tampering with a bundle is covered by package verifier's tests, not by this report.",
}
