//go:build !race

package mcptest

// raceEnabled is true in a binary built with -race.
const raceEnabled = false
