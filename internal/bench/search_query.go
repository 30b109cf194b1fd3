package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/search/searchcorpus"
	"github.com/pifleet/sessionlog/internal/wire"
)

// QueryText is q in the search language of GET /v1/search.
func QueryText(q searchcorpus.Query) string {
	parts := append([]string{}, q.Words...)
	if len(q.Phrase) > 0 {
		parts = append(parts, `"`+strings.Join(q.Phrase, " ")+`"`)
	}
	if q.Prefix != "" {
		parts = append(parts, q.Prefix+"*")
	}
	if q.Role != "" {
		parts = append(parts, "role:"+q.Role)
	}
	if q.Cwd != "" {
		parts = append(parts, "cwd:"+q.Cwd)
	}
	return strings.Join(parts, " ")
}

// rgCommand is what a pi user runs today for q over the session files
// under dir (pi's layout: a folder per cwd), as a shell pipeline: -i -w
// for each word (lines holding them all: one rg per word, piped), the
// phrase's words separated by non-word characters, a prefix at a word's
// start, a cwd as its folder and a role as its JSON member. It prints a
// count of matching lines.
func rgCommand(rg, dir string, q searchcorpus.Query) string {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	if q.Cwd != "" {
		dir = filepath.Join(dir, "--"+strings.ReplaceAll(strings.Trim(q.Cwd, "/"), "/", "-")+"--")
	}
	var pats []string // each an rg's arguments
	for _, w := range q.Words {
		pats = append(pats, "-i -w "+quote(w))
	}
	if len(q.Phrase) > 0 {
		pats = append(pats, "-i -w "+quote(strings.Join(q.Phrase, `\W+`)))
	}
	if q.Prefix != "" {
		pats = append(pats, "-i "+quote(`\b`+q.Prefix))
	}
	if q.Role != "" {
		pats = append(pats, "-F "+quote(`"role":"`+q.Role+`"`))
	}
	var cmd strings.Builder
	for i, p := range pats {
		switch {
		case len(pats) == 1:
			fmt.Fprintf(&cmd, "%s -c --no-filename %s %s", rg, p, quote(dir))
		case i == 0:
			fmt.Fprintf(&cmd, "%s --no-filename %s %s", rg, p, quote(dir))
		case i == len(pats)-1:
			fmt.Fprintf(&cmd, " | %s -c %s", rg, p)
		default:
			fmt.Fprintf(&cmd, " | %s %s", rg, p)
		}
	}
	return cmd.String()
}

// runRg runs an rg pipeline and returns the lines it counted (exit 1, no
// match, is a count of 0).
func runRg(ctx context.Context, pipeline string) (int, error) {
	out, err := exec.CommandContext(ctx, "sh", "-c", pipeline).Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && len(out) == 0 {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", pipeline, err)
	}
	n := 0
	for f := range bytes.FieldsSeq(out) {
		k, _ := strconv.Atoi(string(f))
		n += k
	}
	return n, nil
}

// searchQueries times each query of searchcorpus.Queries through GET
// /v1/search (limit 20), one at a time, and rg doing the same over the
// files, and holds each to the targets of issue 35: p50 ≤ 20 ms, ≥ 20×
// faster than rg.
func searchQueries(ctx context.Context, res *Result, hc apiclient.Client, c searchcorpus.Corpus, o SearchOptions) error {
	rg, rgErr := exec.LookPath("rg")
	if rgErr != nil {
		res.note("rg not found (Debian's ripgrep): no baseline")
	}
	for _, q := range searchcorpus.Queries {
		text := QueryText(q)
		var total int
		ask := func(ctx context.Context) error {
			var r wire.SearchReply
			if err := apiclient.Call(ctx, hc, wire.SearchRequest{Query: text, Limit: 20}, &r); err != nil {
				return fmt.Errorf("search %q: %w", text, err)
			}
			total = r.Total
			return nil
		}
		if err := ask(ctx); err != nil { // warm-up
			return err
		}
		name := "GET /v1/search " + text
		lat, wall, err := runJobs(ctx, o.Progress, name, 1, o.Queries, o.Queries, func(ctx context.Context, _ int, m *meter) error {
			return m.time(func() error { return ask(ctx) })
		})
		if err != nil {
			return err
		}
		node := row(fmt.Sprintf("%s (%d hits)", name, total), KindNode, "queries", lat, wall)
		res.target("p50, "+q.Label, node.P50Ms, "ms", 20, false)
		if rgErr != nil {
			res.Rows = append(res.Rows, node)
			continue
		}
		pipeline := rgCommand(rg, c.Dir, q)
		var lines int
		lat, wall, err = runJobs(ctx, o.Progress, "rg: "+q.Label, 1, o.Rg, o.Rg, func(ctx context.Context, _ int, m *meter) error {
			return m.time(func() error {
				var err error
				lines, err = runRg(ctx, pipeline)
				return err
			})
		})
		if err != nil {
			return err
		}
		base := row(fmt.Sprintf("rg: %s (%d lines)", q.Label, lines), KindBaseline, "queries", lat, wall)
		node.Vs = base.Name
		res.Rows = append(res.Rows, base, node)
		res.target("× faster than rg (p50), "+q.Label, base.P50Ms/node.P50Ms, "×", 20, true)
	}
	if rgErr == nil {
		res.note("rg commands: %s", strings.Join(rgCommands(c.Dir), "; "))
	}
	return nil
}

func rgCommands(dir string) []string {
	var out []string
	for _, q := range searchcorpus.Queries {
		out = append(out, rgCommand("rg", dir, q))
	}
	return out
}

// appendPhase appends to o.AppendWriters sessions at once, one entry per
// request over HTTP, for o.AppendFor: each writer replays a session of the
// corpus under a new id, then the next. It reports the append rate, the
// index's rate meanwhile, its lag at the end, and how long it then took
// to catch up.
func appendPhase(ctx context.Context, res *Result, sub subject, c searchcorpus.Corpus, o SearchOptions) error {
	w := &indexWatch{c: sub.api()}
	w.poll()
	before := w.latest()
	var maxLag atomic.Uint64
	stopWatch := every(250*time.Millisecond, func() {
		w.poll()
		if l := w.latest().Lag; l > maxLag.Load() {
			maxLag.Store(l)
		}
	})
	pctx, cancel := context.WithTimeout(ctx, o.AppendFor)
	defer cancel()
	var done, failed atomic.Int64
	meters := make([]meter, o.AppendWriters)
	errs := make([]error, o.AppendWriters)
	start := time.Now()
	var wg sync.WaitGroup
	for j := range meters {
		meters[j].done = &done
		wg.Go(func() {
			hc, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: sub.httpURL()})
			if err != nil {
				errs[j] = err
				return
			}
			defer hc.Close()
			for f := j; pctx.Err() == nil; f += o.AppendWriters {
				sid := fmt.Sprintf("%08x-0000-7000-8000-%012x", j, f)
				err := replaySession(pctx, hc, c.Files[f%len(c.Files)], sid, &meters[j])
				switch {
				case err == nil || pctx.Err() != nil:
				case errors.Is(err, wire.ErrUnavailable) || errors.Is(err, wire.ErrTimeout):
					failed.Add(1) // a node short of CPU or disk: on to the next session
				default:
					errs[j] = err
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	ended := time.Now()
	atEnd := w.latest()
	stopWatch()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return err
	}
	var lat latencies
	for _, m := range meters {
		lat = append(lat, m.lat...)
	}
	s, err := nodeStatus(ctx, sub.api())
	if err != nil {
		return err
	}
	if err := waitIndexed(ctx, sub.api(), s.Store.LogLastSeq, o.Progress); err != nil {
		return err
	}
	caught := time.Since(ended)
	ap := row("append through HTTP, one entry per request", KindNode, "entries", lat, wall)
	res.Rows = append(res.Rows, ap)
	res.figure("appends meanwhile: writers", float64(o.AppendWriters), "")
	res.figure("appends meanwhile: entries/s", ap.Rate, "")
	res.figure("appends refused as unavailable or timed out (the session left)", float64(failed.Load()), "")
	res.figure("index meanwhile: records/s", float64(atEnd.Applied-before.Applied)/wall.Seconds(), "")
	res.figure("index lag, most seen while appending (records)", float64(maxLag.Load()), "")
	res.figure("index lag when the appends stopped (records)", float64(atEnd.Lag), "")
	res.target("index: appends stopped to caught up", caught.Seconds()*1000, "ms", 1000, false)
	return nil
}

// replaySession writes a corpus session under the id sid: its header by
// create, then each entry by an append of its own, until the file ends or
// ctx does.
func replaySession(ctx context.Context, hc apiclient.Client, file, sid string, m *meter) error {
	first := true
	return searchcorpus.Lines(file, func(b []byte) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if first {
			first = false
			var h map[string]any
			if err := json.Unmarshal(b, &h); err != nil {
				return err
			}
			h["id"] = sid
			hb, err := json.Marshal(h)
			if err != nil {
				return err
			}
			if _, err := hc.Do(ctx, wire.CreateRequest{Header: hb}); err != nil {
				return fmt.Errorf("create %s: %w", sid, err)
			}
			return nil
		}
		line := append([]byte(nil), b...)
		return m.time(func() error {
			if _, err := hc.Do(ctx, wire.AppendRequest{SessionID: sid, Entries: []json.RawMessage{line}}); err != nil {
				return fmt.Errorf("append to %s: %w", sid, err)
			}
			return nil
		})
	})
}
