//go:build race

package verifier

// raceEnabled shortens the exhaustive tamper test under the race detector,
// which makes Ed25519 some thirty times slower and has nothing to find in
// a single goroutine. Without -race every byte is tried.
const raceEnabled = true
