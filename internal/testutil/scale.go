package testutil

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// ScaleEnv names the one knob for slow machines: every wait bound of every
// test is multiplied by it (WaitFor and Poll do so themselves; a bound a
// test passes elsewhere goes through Scale). It is a number such as 2 or
// 0.5; absent, it is 1, or raceScale under the race detector, which slows
// the code under test several times over.
const ScaleEnv = "PI_TEST_SCALE"

var scale = func() float64 {
	v := os.Getenv(ScaleEnv)
	if v == "" {
		return raceScale
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		// A typo must not silently run with the default: every test of the
		// run would wait on bounds nobody chose.
		panic(fmt.Sprintf("%s=%q: want a positive number such as 2", ScaleEnv, v))
	}
	return f
}()

// Scale is d multiplied by the machine's scale (PI_TEST_SCALE): the bound
// a test waits within for something that must happen. It is never a
// verdict on speed: no test passes or fails on a duration.
func Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * scale)
}

// Scaled reports the factor in force, for a test's log.
func Scaled() float64 { return scale }
