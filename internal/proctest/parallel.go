package proctest

import (
	"flag"
	"strconv"
)

// DefaultParallel sets go test's -parallel to n unless the command line
// set it. A process suite's tests spend their time waiting on elections,
// restarts and timeouts of processes of their own, so at go test's default
// (one test per core) the cores sit idle; call it from TestMain after
// flag.Parse.
func DefaultParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err) // only if testing's flags are not registered: not a test binary
		}
	}
}
