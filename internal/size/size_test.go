package size

import "testing"

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "4096": 4096, "512MiB": 512 << 20, "2 GiB": 2 << 30, "1.5KiB": 1536,
		"3KB": 3000, "1TB": 1e12, "1TiB": 1 << 40, "7B": 7} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"lots", "-1MiB", "MiB"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
	for _, n := range []int64{0, 1, 1000, 1 << 10, 3 << 20, 5 << 30, 1<<30 + 1} {
		if got, err := Parse(Format(n)); err != nil || got != n {
			t.Errorf("Parse(Format(%d)) = %d (%q), %v", n, got, Format(n), err)
		}
	}
	if Format(512<<20) != "512MiB" {
		t.Errorf("Format(512MiB) = %q", Format(512<<20))
	}
}

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 20: "3.0 MiB", 5 << 40: "5.0 TiB", 3 << 50: "3.0 PiB"} {
		if got := Human(n); got != want {
			t.Errorf("Human(%d) = %q, want %q", n, got, want)
		}
	}
}
