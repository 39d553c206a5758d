// Package report measures bankdoor end to end and renders what it found:
// the data behind `go run ./cmd/bankdoor-report` (a command of its own,
// not linked into the bankdoor binary), which writes reports/bankdoor.json
// (this package's [Report], JSON), reports/bankdoor.md ([Markdown]),
// reports/latency.svg ([LatencySVG]) and the README block between
// <!-- report:begin --> and <!-- report:end --> ([ReadmeBlock]).
//
// # What Is Run
//
// [Bench] drives the real binaries with the Go SDK's MCP client
// (internal/mcptest): over real stdio, the attack catalogue
// (internal/attacks) through `bankdoor proxy` with the fixture bank
// behind it, one session per fixture variant, and each money-moving
// attack straight to a fresh fixture (the control runs); then timed
// tools/call direct, proxied and denied, over stdio and over MCP
// streamable HTTP (the fixture's --http; `bankdoor proxy --listen` with
// an agent's bearer token, the fixture behind it over --url); then
// several stdio proxies on one receipts directory and one key, each with
// its own fixture and client (internal/fleet): denies through all at once,
// and the ledger's holder SIGKILLed for another to take over; then the
// MCP conformance suite's server scenarios (internal/conformance), each
// directly against a server and through `bankdoor proxy --listen` in
// front of it ([Bench.Conformance]).
// [LedgerBench] runs package ledger in process with real signed receipts
// from fresh keys, verifier.VerifyDir over a receipts directory, and
// verifier.VerifyAnchored over an export bundle (package verifier/bundle)
// of the anchoring log, whole and with its newest receipts deleted; and,
// on a PostgreSQL server of its own (package pgtest, Debian's
// PostgreSQL on 127.0.0.1, fsync and synchronous_commit on), the same
// ledger code on a database per row, stopped when those rows are done.
// [Bench.SideBySide] runs the load generator of package loadgen against
// the built `bankdoor ledger serve` and Tessera's POSIX conformance log
// (package tesseralog, built from the module proxy at the version
// tools/tessera/go.mod pins), alternating, for durable appends/s, the time
// to a covering checkpoint and the server CPU per entry of each, with the
// load generator's own CPU beside it (on one machine the two share the
// CPUs).
// Nothing leaves the machine: every HTTP server listens on 127.0.0.1 (the
// conformance suite's npm project is installed from the registry once).
//
// # JSON Schema (bankdoor-report/v1)
//
// The JSON is [Report] encoded with encoding/json; the struct tags are the
// member names. The member "schema" is always "bankdoor-report/v1" (see
// [Schema]). Within v1 members may be added; removing or renaming one, or
// changing its meaning or unit, makes v2. A reader should decode with
// unknown members allowed unless it pins the version, as the test does.
//
//   - "attacks": one [AttackRow] per attack. An attack held if
//     "actual_rule" equals "expected_rule", "reached" (messages the bank
//     logged) is 0, "moved_cents" is 0, "receipt" names its receipt and
//     "problems" is absent.
//   - "controls": one [ControlRow] per money-moving attack sent without
//     the gate; "moved_cents" must be above 0.
//   - "conformance": one [ConformanceTable] per target; each row is a
//     scenario with "direct" and "gateway" ("pass" or "fail: " and the
//     failed checks; "gateway" may also be "hollow pass", which the counts
//     leave out) and "why" they differ ("gate deny: RULE", "passes only
//     through bankdoor: ...", "hollow pass: ..." or "relay difference:
//     ..."; see conformance.Row), absent when they agree.
//   - "measurements": [Measurement] rows with a stable "id". "status" is
//     "measured", or "not measured: WHY" (a figure this build cannot take
//     yet, never an invented number), or "failed: WHY". A measured row has
//     "value" (a rate or scalar) or "dist" (p50, p95, p99, max), in
//     "unit", over "n" samples or items.
//   - "claims": one [Claim] per README claim, derived from the rows by
//     [Claims] (a pure function, so anyone can recompute them), with
//     "status" "held", "measured" (a performance figure, reported and
//     never judged), "failed: WHY" or "not measured: WHY", and "evidence",
//     the markdown anchor of the backing rows: "attacks", "controls" or
//     "m-" followed by a measurement id.
//   - "latency_chart": the sorted samples, in µs, behind latency.svg.
//
// The latency rows, section "latency", all in one run with the calls
// interleaved: "latency-direct", "latency-proxied" and "latency-deny"
// over stdio, "latency-http-direct", "latency-http-proxied" and
// "latency-http-deny" over streamable HTTP (each a "dist" in µs, "n" the
// timed calls), and for each transport the ratios proxied/direct at p50,
// p95 and p99, "latency-ratio-p50" ... and "latency-http-ratio-p50" ...
// ("value", unit "x", each the quotient of the two rows' percentiles).
// The chart has one series per latency row, in that order.
//
// The many-proxies rows, section "procs": "denies-procs-1", "-2", "-4"
// and "-8" ("value" in denies/s, "n" the timed denies, settings
// "procs_denies", spread over that many stdio proxies on one receipts
// directory and one key, after one untimed deny through each); each is
// "failed: WHY" unless afterwards the directory verified as one chain
// with one receipt per deny answered and the embedded ledger held the
// whole chain. "ledger-takeover" is a "dist" in ms over "n" SIGKILLs of
// the proxy holding the embedded ledger (settings "takeover_rounds"),
// each timed from the signal to another proxy's log line saying it took
// over. Their "note" gives the checks, the standby's retry interval and
// the load average when the row started.
//
// The peak-heap rows, section "ledger": while one log grows to each of
// settings "proof_sizes" in turn, the peak Go heap (HeapAlloc sampled
// every millisecond) over appending the last receipts up to that size, as
// many as the smallest size, from a collected heap, growing only (the
// inclusion proofs timed at each size are not included). "value" in MiB,
// "n" the size; the largest size's row is "ledger-peak-heap", the others
// "ledger-peak-heap-SIZE". The claim "ledger-heap-flat" compares them.
//
// The PostgreSQL rows, section "postgres", measured in the same run as
// the bbolt rows they mirror: "appends-batched-postgres" (group commit,
// 64 agents, one ledger server), "appends-batched-postgres-2" (two Logs
// on one database, 32 of the 64 agents each; "value" the total rate),
// "checkpoint-latency-postgres", "inclusion-proof-postgres-SIZE" at the
// largest of "proof_sizes" (no peak-heap rows), and
// "appends-batched-postgres-of-bbolt", the first over "appends-batched"
// (unit "× bbolt"). Their "note" names the server's version. If the
// server does not start, each row is "failed: ..." with the reason. The
// claims "postgres-group-commit", "postgres-checkpoint-latency" and
// "postgres-proofs" set them beside issue 19's goals (5000 receipts/s,
// p99 100 ms, p99 2 ms), reported, never judged held.
//
// # Example
//
// One attack row and one measurement of a run:
//
//	{
//	  "id": "name.cyrillic-a",
//	  "description": "transfer spelt with a Cyrillic а (U+0430)",
//	  "expected_rule": "name.charset",
//	  "actual_rule": "name.charset",
//	  "reached": 0,
//	  "moved_cents": 0,
//	  "receipt": "000001.json",
//	  "unsafe": false
//	}
//	{
//	  "id": "latency-proxied",
//	  "section": "latency",
//	  "what": "proxied: allowed read through the gate",
//	  "status": "measured",
//	  "unit": "µs",
//	  "n": 400,
//	  "dist": {"p50": 3302.803, "p95": 18816.18, "p99": 50428.181, "max": 70541.489}
//	}
//
// Percentiles are nearest rank, rounded down (internal/perf.Quantile, as
// the ledger benchmarks compute them).
package report
