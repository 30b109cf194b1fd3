package proctest

import (
	"maps"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	text := []byte(`# HELP pi_stream_info Always 1.
# TYPE pi_stream_info gauge
pi_stream_info{leader="",shard="0",stream="PI_SESSIONS"} 1
pi_jetstream_storage_bytes 1.5e+06
pi_odd{path="a,b=\"c\"}"} 2
pi_pair{a="1",a1="2"} 3
`)
	got, err := ParseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		Series("pi_stream_info", "stream", "PI_SESSIONS", "shard", "0", "leader", ""): 1,
		Series("pi_jetstream_storage_bytes"):                                          1.5e6,
		Series("pi_odd", "path", `a,b="c"}`):                                          2,
		Series("pi_pair", "a1", "2", "a", "1"):                                        3, // by label name, as written
	}
	if !maps.Equal(got, want) {
		t.Fatalf("ParseMetrics:\n got %v\nwant %v", got, want)
	}
	name, labels, err := SplitSeries(Series("pi_odd", "path", `a,b="c"}`, "x", "y"))
	if err != nil || name != "pi_odd" || !maps.Equal(labels, map[string]string{"path": `a,b="c"}`, "x": "y"}) {
		t.Fatalf("SplitSeries: %q %v %v", name, labels, err)
	}
	if _, _, err := SplitSeries(`pi_x{a=b}`); err == nil {
		t.Fatal("SplitSeries took an unquoted value")
	}
	if _, err := ParseMetrics([]byte("pi_x{}")); err == nil {
		t.Fatal("ParseMetrics took a line without a value")
	}
}
