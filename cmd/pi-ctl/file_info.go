package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

const fileInfoHelp = `Usage: pi-ctl file info FILE [--json]

Summarizes a session file: header, name, default leaf, labels, entry counts
by type and the shape of the tree.

--json prints one object: sessionId, version (3, after migration),
sourceVersion, migrated, name (null when unnamed), leafId (null when there
are no entries), labels, entryCount, countsByType, cwd, created (the
header's timestamp), parentSession (or null), roots, leaves, branchPoints,
depth (entries on the longest path), duplicateHeaders, skippedLines
([{"line","reason"}]) and usageBreakdown ([{"key","cost","tokens"}]: pi
1.1's cost and tokens per provider/model over every entry, highest cost
first; "Tools/summaries" for tool results, branch summaries and
compactions).
`

func runFileInfo(_ context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl file info")
	asJSON := fs.Bool("json", false, "print a JSON object")
	pos, err := parseArgs(e, fs, fileInfoHelp, args, "FILE")
	if err != nil {
		return err
	}
	f, err := loadSession(e, pos[0], tree.ReadOptions{})
	if err != nil {
		return err
	}
	st := shapeOf(f.Tree())
	var out []byte
	if *asJSON {
		out = append(appendInfoJSON(nil, f, st), '\n')
	} else {
		out = []byte(infoText(f, st))
	}
	_, err = e.stdout.Write(out)
	return err
}

// shape is what the tree looks like, from its pre-order nodes.
type shape struct{ roots, leaves, branchPoints, depth int }

func shapeOf(nodes []tree.Node) shape {
	var st shape
	for _, n := range nodes {
		if n.Depth == 0 {
			st.roots++
		}
		switch {
		case n.Children == 0:
			st.leaves++
		case n.Children > 1:
			st.branchPoints++
		}
		st.depth = max(st.depth, n.Depth+1)
	}
	return st
}

// appendInfoJSON writes the info object. Strings go through
// jsjson.AppendString so lone surrogates survive as pi would write them.
func appendInfoJSON(b []byte, f *tree.File, st shape) []byte {
	h := &f.Header
	str := func(b []byte, key, val string, null bool) []byte {
		b = append(jsjson.AppendString(append(b, ','), key), ':')
		if null {
			return append(b, "null"...)
		}
		return jsjson.AppendString(b, val)
	}
	num := func(b []byte, key string, n int) []byte {
		b = append(jsjson.AppendString(append(b, ','), key), ':')
		return strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, `{"sessionId":`...)
	b = jsjson.AppendString(b, h.ID)
	b = num(b, "version", h.Version)
	b = num(b, "sourceVersion", f.SourceVersion)
	b = append(b, `,"migrated":`...)
	b = strconv.AppendBool(b, f.Migrated())
	name, named := f.Name()
	b = str(b, "name", name, !named)
	b = str(b, "leafId", f.LeafID(), f.Len() == 0)
	b = append(b, `,"labels":`...)
	b = appendStringMap(b, f.Labels())
	b = num(b, "entryCount", f.Len())
	b = append(b, `,"countsByType":{`...)
	counts := f.CountsByType()
	for k, t := range slices.Sorted(maps.Keys(counts)) {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(jsjson.AppendString(b, t), ':'), int64(counts[t]), 10)
	}
	b = append(b, '}')
	b = str(b, "cwd", h.Cwd, false)
	b = str(b, "created", h.Timestamp, false)
	b = str(b, "parentSession", h.ParentSession, h.ParentSession == "")
	b = num(b, "roots", st.roots)
	b = num(b, "leaves", st.leaves)
	b = num(b, "branchPoints", st.branchPoints)
	b = num(b, "depth", st.depth)
	b = num(b, "duplicateHeaders", f.DuplicateHeaders)
	b = append(b, `,"skippedLines":[`...)
	for k, s := range f.Skipped {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, `{"line":`...), int64(s.Line), 10)
		b = append(jsjson.AppendString(append(b, `,"reason":`...), s.Reason), '}')
	}
	b = append(b, `],"usageBreakdown":`...)
	b = tree.AppendUsageJSON(b, f.UsageBreakdown())
	return append(b, '}')
}

func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	for k, key := range slices.Sorted(maps.Keys(m)) {
		if k > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(append(jsjson.AppendString(b, key), ':'), m[key])
	}
	return append(b, '}')
}

// infoText is the human summary: one "key  value" line per fact.
func infoText(f *tree.File, st shape) string {
	var b strings.Builder
	line := func(key, format string, args ...any) {
		fmt.Fprintf(&b, "%-10s %s\n", key, fmt.Sprintf(format, args...))
	}
	h := &f.Header
	line("session", "%s", tree.Printable(h.ID))
	if name, ok := f.Name(); ok {
		line("name", "%s", tree.Printable(name))
	} else {
		line("name", "(none)")
	}
	line("created", "%s", tree.Printable(h.Timestamp))
	line("cwd", "%s", tree.Printable(h.Cwd))
	if h.ParentSession != "" {
		line("parent", "%s", tree.Printable(h.ParentSession))
	}
	if f.Migrated() {
		line("version", "%d (migrated from version %d when read; 'pi-ctl file migrate' writes it)", h.Version, f.SourceVersion)
	} else {
		line("version", "%d", h.Version)
	}
	counts := f.CountsByType()
	types := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	var parts []string
	for _, t := range types {
		parts = append(parts, fmt.Sprintf("%s %d", tree.Printable(t), counts[t]))
	}
	line("entries", "%d%s", f.Len(), prefixed(": ", strings.Join(parts, ", ")))
	line("tree", "%s, %s, %s, depth %d", plural(st.roots, "root"), plural(st.leaves, "leaf"), plural(st.branchPoints, "branch point"), st.depth)
	if f.Len() > 0 {
		line("leaf", "%s", tree.Printable(f.LeafID()))
	} else {
		line("leaf", "(none: no entries)")
	}
	labels := f.Labels()
	key := "labels"
	if len(labels) == 0 {
		line(key, "(none)")
	}
	for _, id := range slices.Sorted(maps.Keys(labels)) {
		line(key, "%s %s", tree.Printable(id), strconv.Quote(labels[id])) // quoted: labels may be blank
		key = ""
	}
	// pi 1.1's usage breakdown; files of 0.73.1 have none to show.
	key = "usage"
	for _, u := range f.UsageBreakdown() {
		line(key, "%s", usageText(u))
		key = ""
	}
	if n := f.DuplicateHeaders; n > 0 {
		line("headers", "%d repeated identical header line(s), ignored as pi does", n)
	}
	if n := len(f.Skipped); n > 0 {
		line("skipped", "%s pi ignores (listed above)", plural(n, "line"))
	}
	return b.String()
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func plural(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "f"):
		return strconv.Itoa(n) + " " + strings.TrimSuffix(noun, "f") + "ves"
	case strings.HasSuffix(noun, "y"):
		return strconv.Itoa(n) + " " + strings.TrimSuffix(noun, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// usageText is one row of pi's usage breakdown: "provider/model  $cost
// N tokens", the cost rounded to 1/100 of a cent.
func usageText(u tree.UsageTotal) string {
	return fmt.Sprintf("%s  $%s  %s tokens", tree.Printable(u.Key), jsjson.FormatNumber(math.Round(u.Cost*10000)/10000), jsjson.FormatNumber(u.Tokens))
}
