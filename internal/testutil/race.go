//go:build race

package testutil

// raceScale is the default scale under the race detector.
const raceScale = 2
