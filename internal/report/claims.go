package report

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bankdoor/bankdoor/internal/attacks"
)

// ArgValues returns the argument values of an attack sent with the SDK
// client that are distinctive enough to search a receipt for: strings of
// at least 4 bytes and integers of at least 1000. A receipt must hold
// none of them (it records argument names and a hash only).
func ArgValues(a attacks.Attack) []string {
	m, ok := a.Args.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range m {
		switch v := v.(type) {
		case string:
			if len(v) >= 4 {
				out = append(out, v)
			}
		case int:
			if v >= 1000 {
				out = append(out, strconv.Itoa(v))
			}
		case float64:
			if v >= 1000 {
				out = append(out, strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
	}
	return out
}

// Leaks returns the runs of a's argument values found in the receipt
// file name in dir (attacks.Leaks: values at any depth, nested member
// names included; only top-level names may appear).
func Leaks(a attacks.Attack, dir, name string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	return attacks.Leaks(a, b), nil
}

// HasValue reports whether v occurs in b as a whole token: not preceded
// or followed by an ASCII letter or digit. A value such as "1000" then
// does not match inside a hex hash or a longer number.
func HasValue(b []byte, v string) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(v))
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(v)
		if (start == 0 || !alnum(b[start-1])) && (end == len(b) || !alnum(b[end])) {
			return true
		}
		i = start + 1
	}
}

func alnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Claims derives the README's claims from the rows of r. It is a pure
// function of the report, so a reader (or a test) can recompute it from
// bankdoor.json.
func Claims(r *Report) []Claim {
	return []Claim{
		deniedClaim(r.Attacks),
		controlClaim(r.Attacks, r.Controls),
		receiptsClaim(r),
		leakClaim(r.Attacks),
		rugPullClaim(r.RugPulls),
		latencyClaim(r),
		httpLatencyClaim(r),
		denyLatencyClaim(r),
		metricsCostClaim(r),
		procsClaim(r),
		takeoverClaim(r),
		appendClaim(r),
		boundClaim(r, "appends-batched-1024-of-bound", "In-process group commit with 1,024 single-receipt appenders (the side by side's load) reaches 0.6 of this machine's physical bound of durable appends (measured in the same run)", 0.6),
		boundClaim(r, "verify-offline-of-bound", "Offline verification of a receipts directory reaches 0.7 of the bound of its checks on all cores (measured in the same run)", 0.7),
		tesseraClaim(r),
		proofClaim(r),
		tilesClaim(r),
		heapFlatClaim(r),
		postgresAppendsClaim(r),
		postgresCheckpointClaim(r),
		postgresProofClaim(r),
		anchorClaim(r),
		budgetClaim(r),
		anchoredRateClaim(r),
		truncationClaim(r),
	}
}

func deniedClaim(rows []AttackRow) Claim {
	c := Claim{ID: "denied-before-server", Evidence: "attacks",
		Text: "Payments, writes and every attack in the catalogue are denied in code, with the expected rule, before the server sees them"}
	ok, reached, moved := 0, 0, int64(0)
	var bad []string
	for _, a := range rows {
		if !a.Forwarded {
			reached += a.Reached
		}
		moved += a.Moved
		if a.ActualRule == a.ExpectedRule && (a.Reached == 0) != a.Forwarded && a.Moved == 0 && a.Receipt != "" && len(a.Problems) == 0 {
			ok++
		} else {
			bad = append(bad, a.ID)
		}
	}
	c.Figure = fmt.Sprintf("%d/%d denied as expected; reached the server %d times (besides the allowed requests whose answers were refused); %d cents moved", ok, len(rows), reached, moved)
	c.Status = held(len(rows) > 0 && len(bad) == 0, "not blocked as expected: "+strings.Join(bad, ", "))
	return c
}

func controlClaim(rows []AttackRow, controls []ControlRow) Claim {
	c := Claim{ID: "gate-stops-money", Evidence: "controls",
		Text: "The gate is what stops them: without it, the unsafe fixture moves money for each money-moving attack"}
	unsafe := 0
	for _, a := range rows {
		if a.Unsafe {
			unsafe++
		}
	}
	moved := 0
	var still []string
	for _, k := range controls {
		if k.Moved > 0 && k.Error == "" {
			moved++
		} else {
			still = append(still, k.ID)
		}
	}
	c.Figure = fmt.Sprintf("%d/%d control runs moved money", moved, len(controls))
	c.Status = held(unsafe > 0 && len(controls) == unsafe && len(still) == 0,
		fmt.Sprintf("%d unsafe attacks, %d controls, no money moved in: %s", unsafe, len(controls), strings.Join(still, ", ")))
	return c
}

func receiptsClaim(r *Report) Claim {
	c := Claim{ID: "receipts-verify", Evidence: "m-attack-receipts",
		Text: "Every deny leaves an Ed25519-signed, hash-chained receipt that verifies offline with only the public key"}
	m, ok := find(r.Measurements, "attack-receipts")
	if !ok {
		c.Status, c.Figure = "not measured: no attack-receipts row", "-"
		return c
	}
	c.Figure = fmt.Sprintf("%d receipts for %d attacks", m.N, len(r.Attacks))
	c.Status = held(m.Status == StatusMeasured && m.N == len(r.Attacks), m.Status)
	return c
}

func leakClaim(rows []AttackRow) Claim {
	c := Claim{ID: "no-values-in-receipts", Evidence: "attacks",
		Text: "Receipts record argument names and a hash, never argument values"}
	var leaked []string
	for _, a := range rows {
		for _, p := range a.Problems {
			if strings.HasPrefix(p, leakProblem) {
				leaked = append(leaked, a.ID)
			}
		}
	}
	c.Figure = fmt.Sprintf("%d of %d receipts hold an argument value", len(leaked), len(rows))
	c.Status = held(len(rows) > 0 && len(leaked) == 0, "values in the receipts of: "+strings.Join(leaked, ", "))
	return c
}

func rugPullClaim(rows []RugPullRow) Claim {
	c := Claim{ID: "rug-pull-caught", Evidence: "rug-pulls",
		Text: "A pinned tool changed at any point of a session (before an answer, between pages, notifying or not) is never called: over stdio, --url and --listen, sequential and pipelined, whatever protocol version the agent asks for"}
	denied, allowed := 0, 0
	var moved int64
	var bad []string
	for _, r := range rows {
		denied += r.Denied
		allowed += r.Allowed
		moved += r.Moved
		if len(r.Problems) > 0 || r.Moved != 0 {
			bad = append(bad, r.Case)
		}
	}
	c.Figure = fmt.Sprintf("%d sessions: %d calls after a change denied with pin.mismatch (receipts verified), %d before it answered, 0 changed calls reached the bank in %d clean sessions; %d cents moved", len(rows), denied, allowed, len(rows)-len(bad), moved)
	c.Status = held(len(rows) > 0 && len(bad) == 0 && denied > 0, "problems in: "+strings.Join(bad, ", "))
	return c
}

// leakProblem starts the problem an AttackRow lists for a value found in
// its receipt.
const leakProblem = "receipt holds argument value"

func latencyClaim(r *Report) Claim {
	return costClaim(r, "latency", Claim{ID: "gate-cost", Evidence: "m-latency-ratio-p50",
		Text: "Cost of the gate on an allowed read (proxied vs direct, same run)"})
}

func httpLatencyClaim(r *Report) Claim {
	return costClaim(r, "latency-http", Claim{ID: "gate-cost-http", Evidence: "m-latency-http-ratio-p50",
		Text: "Cost of the gate on an allowed read over streamable HTTP (proxy --listen vs direct, same run)"})
}

// costClaim fills c from the rows PREFIX-direct, PREFIX-proxied and
// their ratios PREFIX-ratio-p50 and -p99.
func costClaim(r *Report, prefix string, c Claim) Claim {
	d, ok1 := find(r.Measurements, prefix+"-direct")
	p, ok2 := find(r.Measurements, prefix+"-proxied")
	q50, ok3 := find(r.Measurements, prefix+"-ratio-p50")
	q99, ok4 := find(r.Measurements, prefix+"-ratio-p99")
	if !ok1 || !ok2 || !ok3 || !ok4 || p.Dist == nil || d.Dist == nil {
		c.Status, c.Figure = "not measured: "+prefix+" rows missing", "-"
		return c
	}
	c.Status = StatusMeasured
	c.Figure = fmt.Sprintf("p50 %s direct, %s proxied (%.2fx); p99 %s direct, %s proxied (%.2fx)",
		num(d.Dist.P50, d.Unit), num(p.Dist.P50, p.Unit), q50.Value, num(d.Dist.P99, d.Unit), num(p.Dist.P99, p.Unit), q99.Value)
	return c
}

// metricsCostClaim compares the proxied read and the deny with and
// without --metrics-addr (issue 18's goal: within 3%).
func metricsCostClaim(r *Report) Claim {
	c := Claim{ID: "metrics-cost", Evidence: "m-latency-metrics-ratio-proxied",
		Text: "Serving metrics (--metrics-addr) moves the proxied read's and the deny's p50 by at most 3% (same run)"}
	p, ok1 := find(r.Measurements, "latency-metrics-ratio-proxied")
	d, ok2 := find(r.Measurements, "latency-metrics-ratio-deny")
	if !ok1 || !ok2 {
		c.Status, c.Figure = "not measured: latency-metrics rows missing", "-"
		return c
	}
	side := "within 3%"
	if p.Value > 1.03 || d.Value > 1.03 {
		side = "more than 3% slower"
	}
	c.Status = StatusMeasured
	c.Figure = fmt.Sprintf("proxied %.3fx, deny %.3fx with metrics; %s", p.Value, d.Value, side)
	return c
}

func denyLatencyClaim(r *Report) Claim {
	c := Claim{ID: "deny-durable", Evidence: "m-latency-deny", Text: "A deny answers only after its receipt is durable on disk (fsync)"}
	m, ok := find(r.Measurements, "latency-deny")
	if !ok || m.Dist == nil {
		c.Status, c.Figure = "not measured: latency-deny row missing", "-"
		return c
	}
	c.Status = StatusMeasured
	c.Figure = fmt.Sprintf("p50 %s, p99 %s per deny, receipt included", num(m.Dist.P50, m.Unit), num(m.Dist.P99, m.Unit))
	if h, ok := find(r.Measurements, "latency-http-deny"); ok && h.Dist != nil {
		c.Figure += fmt.Sprintf("; over HTTP p50 %s, p99 %s", num(h.Dist.P50, h.Unit), num(h.Dist.P99, h.Unit))
	}
	return c
}

func appendClaim(r *Report) Claim {
	c := Claim{ID: "group-commit", Evidence: "m-appends-batched", Text: "Ledger appends are durable before Append returns, and group commit batches them"}
	b, ok1 := find(r.Measurements, "appends-batched")
	s, ok2 := find(r.Measurements, "appends-single-tx")
	if !ok1 || !ok2 || b.Status != StatusMeasured || s.Status != StatusMeasured {
		c.Status, c.Figure = "not measured: append rows missing or failed", "-"
		return c
	}
	c.Status = StatusMeasured
	c.Figure = fmt.Sprintf("%s batched vs %s one per transaction", num(b.Value, b.Unit), num(s.Value, s.Unit))
	return c
}

func proofClaim(r *Report) Claim {
	c := Claim{ID: "proofs-log-n", Text: "Every inclusion proof verifies against the signed checkpoint and has at most ceil(log2 n) hashes"}
	var figs []string
	for _, m := range r.Measurements {
		if !strings.HasPrefix(m.ID, "inclusion-proof") {
			continue
		}
		if m.Status != StatusMeasured {
			c.Status, c.Figure, c.Evidence = "failed: "+m.Status, "-", "m-"+m.ID
			return c
		}
		at := strings.TrimPrefix(m.ID, "inclusion-proof-")
		if size, ok := strings.CutPrefix(at, strings.TrimPrefix(backendSuffix, "-")+"-"); ok {
			at = size + " on PostgreSQL"
		} else {
			c.Evidence = "m-" + m.ID // the largest bbolt log
		}
		figs = append(figs, fmt.Sprintf("p50 %s at %s", num(m.Dist.P50, m.Unit), at))
	}
	if len(figs) == 0 {
		c.Status, c.Figure, c.Evidence = "not measured: no inclusion proof rows", "-", "m-ledger-peak-heap"
		return c
	}
	c.Status, c.Figure = StatusHeld, strings.Join(figs, "; ")
	return c
}

// tilesClaim reports the tlog-tiles read latency per tile and per entry
// bundle (LedgerBench.TileReads): a performance figure, never judged.
func tilesClaim(r *Report) Claim {
	c := Claim{ID: "tiles-read", Evidence: "m-" + tilesReadID,
		Text: "The ledger serves the c2sp.org/tlog-tiles read API from its stored hashes; every tile read verifies against the signed checkpoint with x/mod's tlog"}
	h, ok1 := find(r.Measurements, tilesReadID)
	e, ok2 := find(r.Measurements, tilesReadID+"-entries")
	z, ok3 := find(r.Measurements, tilesReadID+"-entries-gzip")
	switch {
	case !ok1:
		c.Status, c.Figure = "not measured: no "+tilesReadID+" row", "-"
	case h.Status != StatusMeasured:
		c.Status, c.Figure = "failed: "+h.Status, "-"
	case !ok2 || e.Status != StatusMeasured || !ok3 || z.Status != StatusMeasured:
		c.Status, c.Figure = "failed: no measured "+tilesReadID+"-entries and -entries-gzip rows", "-"
	default:
		c.Status = StatusMeasured
		c.Figure = fmt.Sprintf("full tile p50 %s, p99 %s; entry bundle p50 %s, p99 %s (gzipped: p50 %s, p99 %s)", num(h.Dist.P50, h.Unit), num(h.Dist.P99, h.Unit),
			num(e.Dist.P50, e.Unit), num(e.Dist.P99, e.Unit), num(z.Dist.P50, z.Unit), num(z.Dist.P99, z.Unit))
	}
	return c
}

// heapFlatBound is the criterion of heapFlatClaim: the ledger's peak Go
// heap is flat in the log's size if, at every log size, the same appends
// peak at most heapFlatBound times as high as at the smallest.
const heapFlatBound = 1.25

// heapFlatClaim says whether the peak-heap rows (see LedgerBench.Proofs),
// each over the same number of appends, are flat by heapFlatBound. Like
// the bound claims it reports a goal (issue 16's "peak Go heap flat from
// 10k to 1M receipts"): a performance figure, never judged held or failed.
func heapFlatClaim(r *Report) Claim {
	c := Claim{ID: "ledger-heap-flat", Evidence: "m-" + heapIDPrefix,
		Text: fmt.Sprintf("The ledger's peak Go heap is flat in the log's size: the same appends peak at most %.2fx as high at every larger log as at the smallest (measured in the same run)", heapFlatBound)}
	var rows []Measurement
	for _, m := range r.Measurements {
		if m.ID == heapIDPrefix || strings.HasPrefix(m.ID, heapIDPrefix+"-") {
			rows = append(rows, m)
		}
	}
	slices.SortStableFunc(rows, func(a, b Measurement) int { return cmp.Compare(a.N, b.N) })
	switch {
	case len(rows) == 0:
		c.Status, c.Figure = "not measured: no "+heapIDPrefix+" row", "-"
		return c
	case rows[0].N == rows[len(rows)-1].N:
		c.Status, c.Figure = fmt.Sprintf("not measured: the peak heap at one log size only (%d receipts); flatness needs two", rows[0].N), "-"
		return c
	}
	figs := make([]string, len(rows))
	for i, m := range rows {
		if m.Status != StatusMeasured {
			c.Status, c.Figure = held(false, m.ID+" "+m.Status), "-"
			return c
		}
		figs[i] = fmt.Sprintf("%s at %d", num(m.Value, m.Unit), m.N)
	}
	worst := slices.MaxFunc(rows[1:], func(a, b Measurement) int { return cmp.Compare(a.Value, b.Value) })
	ratio := worst.Value / rows[0].Value
	verdict := fmt.Sprintf("within %.2fx: flat", heapFlatBound)
	if ratio > heapFlatBound {
		verdict = fmt.Sprintf("over %.2fx: not flat", heapFlatBound)
	}
	c.Status = StatusMeasured
	c.Figure = fmt.Sprintf("%s receipts; the highest %.2fx the smallest log's, %s", strings.Join(figs, ", "), ratio, verdict)
	return c
}

// Issue 19's goals for the ledger on PostgreSQL, on a 2-core machine
// with the database on loopback.
const (
	postgresAppendsGoal    = 5000 // receipts/s, group commit, one ledger server
	postgresCheckpointGoal = 100  // ms, p99 of an Append call to a covering checkpoint
	postgresProofGoal      = 2000 // µs, p99 of an inclusion proof
)

// postgresAppendsClaim reports group commit on PostgreSQL against its
// goal, with two ledger servers and the ratio to bbolt beside it.
func postgresAppendsClaim(r *Report) Claim {
	one, two := "appends-batched"+backendSuffix, "appends-batched"+backendSuffix+"-2"
	c := Claim{ID: "postgres-group-commit",
		Text: fmt.Sprintf("Group commit on PostgreSQL reaches %s with one ledger server (issue 19's goal), and two ledger servers on one database append to one log", num(postgresAppendsGoal, "receipts/s"))}
	return goalClaim(r, c, []string{one, two}, false, postgresAppendsGoal, false, func(ms []Measurement) (float64, string) {
		fig := fmt.Sprintf("%s with one server, %s with two", num(ms[0].Value, ms[0].Unit), num(ms[1].Value, ms[1].Unit))
		if q, ok := find(r.Measurements, postgresRatioID); ok && q.Status == StatusMeasured {
			fig += fmt.Sprintf(" (one server: %.2fx bbolt's group commit)", q.Value)
		}
		return ms[0].Value, fig
	})
}

func postgresCheckpointClaim(r *Report) Claim {
	c := Claim{ID: "postgres-checkpoint-latency",
		Text: fmt.Sprintf("On PostgreSQL an Append call sees a covering signed checkpoint within %s at p99 (issue 19's goal)", num(postgresCheckpointGoal, "ms"))}
	return goalClaim(r, c, []string{"checkpoint-latency" + backendSuffix}, true, postgresCheckpointGoal, true, func(ms []Measurement) (float64, string) {
		m := ms[0]
		return m.Dist.P99, fmt.Sprintf("p50 %s, p99 %s", num(m.Dist.P50, m.Unit), num(m.Dist.P99, m.Unit))
	})
}

// postgresProofClaim reports the inclusion proofs on PostgreSQL at the
// largest log size of the run (the goal is for 1M leaves: --full).
func postgresProofClaim(r *Report) Claim {
	c := Claim{ID: "postgres-proofs",
		Text: fmt.Sprintf("On PostgreSQL an inclusion proof takes at most %s at p99 at the run's largest log size (issue 19's goal, at 1M leaves with --full)", num(postgresProofGoal/1000, "ms"))}
	if len(r.Settings.ProofSizes) == 0 {
		c.Status, c.Figure, c.Evidence = "not measured: the run has no proof sizes", "-", "m-appends-batched"+backendSuffix
		return c
	}
	size := slices.Max(r.Settings.ProofSizes)
	id := fmt.Sprintf("inclusion-proof%s-%d", backendSuffix, size)
	return goalClaim(r, c, []string{id}, true, postgresProofGoal, true, func(ms []Measurement) (float64, string) {
		m := ms[0]
		return m.Dist.P99, fmt.Sprintf("p50 %s, p99 %s at %d leaves", num(m.Dist.P50, m.Unit), num(m.Dist.P99, m.Unit), size)
	})
}

// goalClaim reports the value figure computes from rows ids (all
// measured, with a distribution if dist; the first is the evidence)
// against a goal: at most goal if atMost, else at least. It is a
// performance figure, reported, never judged held; a missing row leaves
// it not measured, a failed one fails it.
func goalClaim(r *Report, c Claim, ids []string, dist bool, goal float64, atMost bool, figure func([]Measurement) (float64, string)) Claim {
	c.Evidence = "m-" + ids[0]
	ms := make([]Measurement, len(ids))
	for i, id := range ids {
		m, ok := find(r.Measurements, id)
		switch {
		case !ok:
			c.Status, c.Figure = "not measured: no "+id+" row", "-"
			return c
		case m.Status != StatusMeasured:
			c.Status, c.Figure = held(false, id+" "+m.Status), "-"
			return c
		case dist && m.Dist == nil:
			c.Status, c.Figure = held(false, id+" has no distribution"), "-"
			return c
		}
		ms[i] = m
	}
	v, fig := figure(ms)
	side := "misses the goal"
	if v >= goal && !atMost || v <= goal && atMost {
		side = "meets the goal"
	}
	c.Status, c.Figure = StatusMeasured, fig+"; "+side
	return c
}

func anchorClaim(r *Report) Claim {
	c := Claim{ID: "witness-anchoring", Evidence: "m-anchor-omniwitness", Text: "Checkpoints are cosigned by an external witness (the real omniwitness, C2SP tlog-witness) and the cosignatures verify"}
	m, ok := find(r.Measurements, "anchor-omniwitness")
	if !ok || m.Status != StatusMeasured {
		c.Status, c.Figure = "not measured: no anchoring row", "-"
		if ok {
			c.Status = m.Status
		}
		return c
	}
	c.Status, c.Figure = StatusHeld, fmt.Sprintf("%d checkpoints cosigned and verified (log key + witness, quorum 1); p50 %s each", m.N, num(m.Dist.P50, m.Unit))
	return c
}

// verifyTarget is the target of BenchmarkVerifyExport (package
// verifier) for offline verification of an export bundle, in receipts/s
// on a 2-core machine; the report sets its own figure beside it.
const verifyTarget = 20_000

func anchoredRateClaim(r *Report) Claim {
	c := Claim{ID: "verify-anchored-rate", Evidence: "m-" + anchoredID,
		Text: fmt.Sprintf("An export bundle verifies offline against its checkpoint (bankdoor verify --checkpoint); BenchmarkVerifyExport's target is %s on 2 cores", num(verifyTarget, "receipts/s"))}
	m, ok := find(r.Measurements, anchoredID)
	if !ok || m.Status != StatusMeasured {
		c.Status, c.Figure = "not measured: no "+anchoredID+" row", "-"
		if ok {
			c.Status = m.Status
		}
		return c
	}
	side := "below the target"
	if m.Value >= verifyTarget {
		side = "at or above the target"
	}
	c.Status = StatusMeasured
	c.Figure = fmt.Sprintf("%s over %d receipts on %d cores, %s; %s", num(m.Value, m.Unit), m.N, r.Machine.Cores, side, m.Note)
	return c
}

func truncationClaim(r *Report) Claim {
	c := Claim{ID: "truncation-caught", Evidence: "m-" + truncationID,
		Text: "Deleting the newest receipts of an export bundle is caught offline: verify against the checkpoint names exactly the missing seqs"}
	m, ok := find(r.Measurements, truncationID)
	if !ok {
		c.Status, c.Figure = "not measured: no "+truncationID+" row", "-"
		return c
	}
	if m.Status != StatusMeasured {
		c.Status, c.Figure = held(false, m.Status), "-"
		return c
	}
	c.Status = StatusHeld
	c.Figure = fmt.Sprintf("seq %d..%d of %d deleted; verify named exactly those, in %s", m.N-truncated+1, m.N, m.N, num(m.Value, m.Unit))
	return c
}

func find(ms []Measurement, id string) (Measurement, bool) {
	for _, m := range ms {
		if m.ID == id {
			return m, true
		}
	}
	return Measurement{}, false
}

func held(ok bool, why string) string {
	if ok {
		return StatusHeld
	}
	return "failed: " + why
}

// Failed returns the claims whose status starts with "failed".
func Failed(claims []Claim) []Claim {
	var out []Claim
	for _, c := range claims {
		if strings.HasPrefix(c.Status, "failed") {
			out = append(out, c)
		}
	}
	return out
}

// boundClaim reports a ratio row (see Bound) against its goal: a
// performance figure, reported, never judged held or failed.
func boundClaim(r *Report, id, text string, goal float64) Claim {
	c := Claim{ID: id, Evidence: "m-" + id, Text: text}
	m, ok := find(r.Measurements, id)
	if !ok {
		c.Status, c.Figure = "not measured: no "+id+" row (see m-ledger-bound)", "-"
		return c
	}
	side := "below the goal"
	if m.Value >= goal {
		side = "at or above the goal"
	}
	c.Status = StatusMeasured
	c.Figure = fmt.Sprintf("%.2f of the bound, %s", m.Value, side)
	return c
}
