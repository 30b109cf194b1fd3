package bench

import (
	"fmt"
	"slices"
	"time"
)

// Result is what one scenario measured: its parameters, one row per way of
// doing the same work (the node over each transport, the raw JetStream
// equivalent, pi's local file), and figures that are not rates (memory,
// start-up times) with the targets they are held to.
type Result struct {
	Scenario string   `json:"scenario"`
	Params   []Param  `json:"params"`
	Rows     []Row    `json:"rows"`
	Figures  []Figure `json:"figures,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// Param is one parameter of a run, in the order the table prints them.
type Param struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Row is one way of doing the scenario's work: Ops operations (entries
// appended, sessions created, contexts read, records consumed) in Seconds of
// wall time, with the latency of one operation where it was timed.
type Row struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"` // KindNode, KindRaw or KindBaseline
	Ops     int     `json:"ops"`
	Unit    string  `json:"unit"`
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"rate"` // Ops per second
	// Latency of one operation, in milliseconds; zero when not timed.
	P50Ms  float64 `json:"p50Ms,omitempty"`
	P99Ms  float64 `json:"p99Ms,omitempty"`
	MaxMs  float64 `json:"maxMs,omitempty"`
	MeanMs float64 `json:"meanMs,omitempty"`
	// Vs names the raw row this one is compared with; the ratios are this
	// row's rate over the raw rate (above 1: faster) and this row's p50
	// over the raw p50 (above 1: slower).
	Vs        string  `json:"vs,omitempty"`
	RateRatio float64 `json:"rateRatio,omitempty"`
	P50Ratio  float64 `json:"p50Ratio,omitempty"`
}

// Kinds of rows.
const (
	KindNode     = "node"
	KindRaw      = "raw"
	KindBaseline = "baseline"
)

// Figure is one measured value; Target, when set, is what it is held to
// and Met whether it made it.
type Figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
}

func (r *Result) param(name string, v any) { r.Params = append(r.Params, Param{name, v}) }

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *Result) figure(name string, v float64, unit string) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: v, Unit: unit})
}

// target records a figure with its target: at least bound (atLeast) or
// at most bound.
func (r *Result) target(name string, v float64, unit string, bound float64, atLeast bool) {
	met := v <= bound
	t := fmt.Sprintf("≤ %g %s", bound, unit)
	if atLeast {
		met, t = v >= bound, fmt.Sprintf("≥ %g %s", bound, unit)
	}
	r.Figures = append(r.Figures, Figure{Name: name, Value: v, Unit: unit, Target: t, Met: &met})
}

// Row returns the row named name, or nil.
func (r *Result) Row(name string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Name == name {
			return &r.Rows[i]
		}
	}
	return nil
}

// compare fills the ratios of every row that names a raw row to compare
// with.
func (r *Result) compare() {
	for i := range r.Rows {
		row := &r.Rows[i]
		raw := r.Row(row.Vs)
		if raw == nil {
			continue
		}
		if raw.Rate > 0 {
			row.RateRatio = row.Rate / raw.Rate
		}
		if raw.P50Ms > 0 {
			row.P50Ratio = row.P50Ms / raw.P50Ms
		}
	}
}

// latencies collects the durations of one worker's operations; merged
// after the run, so recording takes no lock.
type latencies []time.Duration

// row turns merged latencies and the wall time of a run into a Row.
func row(name, kind, unit string, lat latencies, wall time.Duration) Row {
	r := Row{Name: name, Kind: kind, Unit: unit, Ops: len(lat), Seconds: wall.Seconds()}
	if wall > 0 {
		r.Rate = float64(len(lat)) / wall.Seconds()
	}
	if len(lat) == 0 {
		return r
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	r.P50Ms = ms(quantile(s, 0.50))
	r.P99Ms = ms(quantile(s, 0.99))
	r.MaxMs = ms(s[len(s)-1])
	r.MeanMs = ms(sum / time.Duration(len(s)))
	return r
}

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
