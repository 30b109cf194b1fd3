package proctest

import (
	"flag"
	"testing"
)

// TestDefaultParallel: the default takes effect unless the command line
// named -parallel. (The running binary read the flag already: setting it
// here changes nothing for this run.)
func TestDefaultParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	t.Cleanup(func() { _ = f.Value.Set(before) })
	DefaultParallel(7)
	switch got := f.Value.String(); {
	case set && got != before:
		t.Errorf("-parallel %s on the command line became %s", before, got)
	case !set && got != "7":
		t.Errorf("-parallel is %s, want the default 7", got)
	}
}
