//go:build !race

package testutil

// raceScale is the default scale without the race detector.
const raceScale = 1
