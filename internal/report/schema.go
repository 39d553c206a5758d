package report

import "time"

// Schema is the value of the "schema" member of every report this
// package writes. A change that removes or renames a member, or changes
// its meaning, gets a new version; new members may be added within v1.
const Schema = "bankdoor-report/v1"

// StatusMeasured and StatusHeld are the Status values of a measurement
// that was taken and of a claim that the run bore out. Anything else
// starts with "not measured: " or "failed: " and says why.
const (
	StatusMeasured = "measured"
	StatusHeld     = "held"
)

// Report is the whole of reports/bankdoor.json.
type Report struct {
	Schema   string    `json:"schema"` // always Schema
	Date     time.Time `json:"date"`   // start of the run, UTC
	Elapsed  float64   `json:"elapsed_s"`
	Machine  Machine   `json:"machine"`
	Go       string    `json:"go"`     // runtime.Version() of the bankdoor binary
	Commit   string    `json:"commit"` // VCS revision, "+dirty" if the tree had changes; "unknown" if neither build info nor git says
	Settings Settings  `json:"settings"`
	// Attacks is the catalogue sent through the proxy (internal/attacks).
	Attacks []AttackRow `json:"attacks"`
	// Controls are the money-moving attacks sent straight to the fixture.
	Controls []ControlRow `json:"controls"`
	// RugPulls are the sessions of the rug-pull matrix.
	RugPulls []RugPullRow `json:"rug_pulls"`
	// Conformance is the MCP conformance suite direct and through the
	// gateway, one table per target; absent from reports made before it.
	Conformance []ConformanceTable `json:"conformance,omitempty"`
	// Measurements are the figures, in the order the markdown shows them.
	Measurements []Measurement `json:"measurements"`
	// Claims are the README's claims, each with the evidence that backs it.
	Claims []Claim  `json:"claims"`
	Limits []string `json:"limits"`
	Chart  []Series `json:"latency_chart"` // the data behind latency.svg
}

// Machine describes where the report ran.
type Machine struct {
	CPU   string `json:"cpu"` // model name from /proc/cpuinfo, "unknown" elsewhere
	Cores int    `json:"cores"`
	OS    string `json:"os"` // GOOS/GOARCH and kernel release
}

// Settings are the sizes the run used (set by --quick, --full or the
// defaults).
type Settings struct {
	Mode    string `json:"mode"`    // "quick", "default" or "full"
	Calls   int    `json:"calls"`   // timed tools/call per latency case
	Appends int    `json:"appends"` // receipts appended with group commit by 64 agents
	// AppendsWide is the receipts appended with group commit by 1,024
	// agents (row appends-batched-1024); 0 in a report made before it.
	AppendsWide int      `json:"appends_wide,omitempty"`
	SingleTx    int      `json:"appends_single_tx"`   // receipts appended one per transaction
	CheckpointN int      `json:"checkpoint_receipts"` // receipts timed to a covering checkpoint
	ProofSizes  []uint64 `json:"proof_sizes"`         // log sizes at which inclusion proofs and the peak heap were measured
	Proofs      int      `json:"proofs"`              // proofs timed per size
	VerifyFiles int      `json:"verify_receipts"`     // receipts in the offline verification run of a directory
	// VerifyBundle is the receipts of the export bundle verified
	// against its checkpoint; scaled with VerifyFiles.
	VerifyBundle int  `json:"verify_bundle_receipts"`
	Anchor       bool `json:"anchor"`  // whether anchoring was attempted
	Anchors      int  `json:"anchors"` // checkpoints anchored, if it was
	// ProcsDenies is the timed denies of each denies-procs-N row, spread
	// over its N proxies; TakeoverRounds the SIGKILLs of the ledger's
	// holder timed by the ledger-takeover row. Both 0 in a report made
	// before those rows existed.
	ProcsDenies    int `json:"procs_denies"`
	TakeoverRounds int `json:"takeover_rounds"`
	// SideBySideWriters, SideBySideSeconds and SideBySideRounds are the
	// load of the side-by-side with Tessera (section "tessera"): writers,
	// seconds per run, runs of each log, alternating. All 0 in a report
	// made before those rows existed.
	SideBySideWriters int `json:"side_by_side_writers"`
	SideBySideSeconds int `json:"side_by_side_s"`
	SideBySideRounds  int `json:"side_by_side_rounds"`
}

// AttackRow is one attack sent through the proxy. It held if ActualRule
// equals ExpectedRule, Reached is 0, Moved is 0, Receipt is set and
// Problems is empty.
type AttackRow struct {
	ID           string `json:"id"`
	Description  string `json:"description"`
	Variant      string `json:"variant,omitempty"` // fixture variant, "" for the default bank
	ExpectedRule string `json:"expected_rule"`
	ActualRule   string `json:"actual_rule"`
	Reached      int    `json:"reached"`     // messages the bank logged during the attack
	Moved        int64  `json:"moved_cents"` // sum of absolute balance changes
	Receipt      string `json:"receipt"`     // receipt file the denial named
	Unsafe       bool   `json:"unsafe"`      // moves money without the gate
	// Forwarded marks an allowed request that reaches the bank on purpose,
	// its answer being what the proxy refuses: it held with Reached > 0.
	Forwarded bool     `json:"forwarded,omitempty"`
	Problems  []string `json:"problems,omitempty"`
}

// RugPullRow is one session of the rug-pull matrix (internal/attacks):
// the bank changed get_balances at Point of the session and the agent
// called it RugPullCalls times. It held if Problems is empty.
type RugPullRow struct {
	Case      string   `json:"case"` // transport_point_notify_order_version
	Transport string   `json:"transport"`
	Allowed   int      `json:"allowed"` // calls answered with a result (before the change)
	Denied    int      `json:"denied"`  // calls denied with pin.mismatch
	Moved     int64    `json:"moved_cents"`
	Problems  []string `json:"problems,omitempty"`
}

// ControlRow is one Unsafe attack sent straight to a fresh fixture.
type ControlRow struct {
	ID      string `json:"id"`
	Variant string `json:"variant,omitempty"`
	Reached int    `json:"reached"`
	Moved   int64  `json:"moved_cents"` // must be > 0
	Answer  string `json:"answer"`
	Error   string `json:"error,omitempty"`
}

// Measurement is one figure. Status is StatusMeasured or "not measured:
// WHY"; only a measured figure has Value or Dist.
type Measurement struct {
	ID      string  `json:"id"`      // stable; the markdown anchor is "m-" + ID
	Section string  `json:"section"` // "latency", "procs", "ledger", "postgres", "tessera", "anchor" or "verify"
	What    string  `json:"what"`
	Status  string  `json:"status"`
	Unit    string  `json:"unit,omitempty"` // of Value and Dist: "ms", "µs", "receipts/s", "MiB", ...
	N       int     `json:"n,omitempty"`    // samples or items
	Value   float64 `json:"value,omitempty"`
	Dist    *Dist   `json:"dist,omitempty"`
	Note    string  `json:"note,omitempty"`
}

// Dist is a latency distribution, in the measurement's unit.
type Dist struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Claim is one claim of the README and what the run says about it.
// Status is StatusHeld (a security property the run checked),
// StatusMeasured (a performance figure, reported, never judged), "failed:
// WHY" or "not measured: WHY". Evidence is the markdown anchor of the
// rows that back it ("attacks", "controls" or "m-" + a measurement ID).
type Claim struct {
	ID       string `json:"id"`
	Text     string `json:"text"`
	Status   string `json:"status"`
	Figure   string `json:"figure"`
	Evidence string `json:"evidence"`
}

// Series is one latency case of the chart: sorted samples in
// microseconds.
type Series struct {
	Name    string    `json:"name"`
	Samples []float64 `json:"samples_us"`
}
