package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/pifleet/sessionlog/internal/bench"
	"github.com/pifleet/sessionlog/internal/cli"
	"github.com/pifleet/sessionlog/internal/wire"
)

// printResult prints a scenario's result: JSON for scripts, or the
// parameters, one table row per way with its ratios to raw, the targets
// (met or not) and the other figures.
func printResult(e *env, res *bench.Result, asJSON bool) error {
	if asJSON {
		b, err := wire.EncodeJSON(res)
		if err != nil {
			return err
		}
		return cli.WriteJSON(e.stdout, b)
	}
	var out strings.Builder
	params := make([]string, len(res.Params))
	for i, p := range res.Params {
		params[i] = fmt.Sprintf("%s %v", p.Name, p.Value)
	}
	fmt.Fprintf(&out, "%s: %s\n\n", res.Scenario, strings.Join(params, ", "))
	t := &cli.Table{}
	unit := "OPS"
	if len(res.Rows) > 0 {
		unit = strings.ToUpper(res.Rows[0].Unit)
	}
	t.Row("", unit, "TIME", unit+"/S", "P50", "P99", "MAX", "VS RAW")
	for _, r := range res.Rows {
		t.Row(r.Name, strconv.Itoa(r.Ops), fmt.Sprintf("%.2f s", r.Seconds), rate(r.Rate),
			latency(r.P50Ms), latency(r.P99Ms), latency(r.MaxMs), ratios(r))
	}
	t.Write(&out)
	var targets, figures cli.Table
	targets.Row("TARGET", "VALUE", "WANT", "")
	for _, f := range res.Figures {
		v := value(f.Value, f.Unit)
		if f.Met == nil {
			figures.Row(f.Name, v)
			continue
		}
		verdict := "met"
		if !*f.Met {
			verdict = "NOT MET"
		}
		targets.Row(f.Name, v, f.Target, verdict)
	}
	if len(targets.Rows) > 1 {
		out.WriteByte('\n')
		targets.Write(&out)
	}
	if len(figures.Rows) > 0 {
		out.WriteByte('\n')
		figures.Write(&out)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&out, "\nnote: %s\n", n)
	}
	_, err := io.WriteString(e.stdout, out.String())
	return err
}

// ratios is the VS RAW cell: the rate ratio and, when timed, the p50 one.
func ratios(r bench.Row) string {
	if r.Vs == "" || r.RateRatio == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.2f× rate", r.RateRatio)
	if r.P50Ratio > 0 {
		s += fmt.Sprintf(", %.2f× p50", r.P50Ratio)
	}
	return s
}

func rate(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// latency writes milliseconds with the precision that matters at their
// scale: µs below a millisecond.
func latency(msv float64) string {
	switch {
	case msv == 0:
		return "-"
	case msv < 1:
		return fmt.Sprintf("%.0f µs", msv*1000)
	case msv < 10:
		return fmt.Sprintf("%.2f ms", msv)
	case msv < 100:
		return fmt.Sprintf("%.1f ms", msv)
	}
	return fmt.Sprintf("%.0f ms", msv)
}

func value(v float64, unit string) string {
	var s string
	switch {
	case v == float64(int64(v)) && v < 1e15:
		s = strconv.FormatInt(int64(v), 10)
	case v >= 100:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	}
	switch unit {
	case "":
		return s
	case "×":
		return s + "×"
	}
	return s + " " + unit
}

// benchProgress is the one-line progress of a scenario on a terminal:
// "phase [#####·····] done/total", redrawn in place. A nil one draws
// nothing; scenarios report from several goroutines.
type benchProgress struct {
	w     io.Writer
	mu    sync.Mutex
	shown bool
}

// newBenchProgress returns the progress line of a scenario, or nil when
// it would only be noise: with --json, or when stderr is no terminal.
func newBenchProgress(e *env, asJSON bool) *benchProgress {
	if asJSON || !cli.IsTerminal(e.stderr) {
		return nil
	}
	return &benchProgress{w: e.stderr}
}

func (p *benchProgress) report(phase string, done, total int) {
	if p == nil || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	full := cli.BarCells * min(done, total) / total
	fmt.Fprintf(p.w, "\r\x1b[K%s [%s%s] %d/%d", phase, strings.Repeat("#", full), strings.Repeat("·", cli.BarCells-full), done, total)
	p.shown = true
}

// clear erases the line before the result is printed.
func (p *benchProgress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
}
