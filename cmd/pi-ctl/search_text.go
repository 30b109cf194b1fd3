package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/pifleet/sessionlog/internal/termtext"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// openIndent sets a hit's tree line (--open) under its row.
const openIndent = "    "

// minSnippet is the least a snippet is cut to, however wide the columns
// before it: fewer columns say nothing.
const minSnippet = 20

// hitPrinter writes search hits as a table whose last column, the
// snippet, takes what is left of the width.
type hitPrinter struct {
	width int
	bold  bool // mark matches in bold (a terminal), else in [brackets]
	// lines are the hits' tree lines by session and entry id (--open).
	lines map[[2]string]string
}

func (p *hitPrinter) write(w io.Writer, hits []wire.SearchHit) error {
	if len(hits) == 0 {
		_, err := io.WriteString(w, "(no hits)\n")
		return err
	}
	ids := make([]string, len(hits))
	for k, h := range hits {
		ids[k] = h.SessionID
	}
	short := shortIDs(ids)
	// The snippet is left out of the table and added to each padded line,
	// so that it can be cut to the columns left and carry escapes that a
	// column would count as text.
	t := &table{}
	t.row("SESSION", "NAME", "ENTRY", "TYPE", "TIME", "PATH", "")
	for k, h := range hits {
		kind := h.Type // a message is its role: user, assistant, toolResult…
		if h.Type == "message" && h.Role != "" {
			kind = h.Role
		}
		onPath := "-"
		if h.OnPath {
			onPath = "•"
		}
		t.row(tree.Printable(short[k]), termtext.Cut(nullable(h.Name, "-"), 20), tree.Printable(h.EntryID), tree.Printable(kind),
			timestamp(h.Timestamp), onPath, "")
	}
	var tb bytes.Buffer
	if err := t.write(&tb); err != nil {
		return err
	}
	rows := strings.Split(strings.TrimSuffix(tb.String(), "\n"), "\n")
	var b strings.Builder
	b.WriteString(rows[0] + "SNIPPET\n")
	for k, h := range hits {
		room := 0
		if p.width > 0 {
			room = max(p.width-termtext.Width(rows[k+1]), minSnippet)
		}
		b.WriteString(rows[k+1] + snippet(h.Snippet, room, p.bold) + "\n")
		if line, ok := p.lines[[2]string{h.SessionID, h.EntryID}]; ok {
			b.WriteString(openIndent + line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// timestamp writes an entry's timestamp as the tables do (shortTime), or
// as it came when it is not RFC 3339.
func timestamp(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return orDash(tree.Printable(s))
	}
	return shortTime(t)
}

// shortIDs cuts the ids to one length, 8 at least, at which the distinct
// ones stay distinct. UUIDv7s of one minute share their first 8
// characters (a millisecond clock), so a fixed prefix would not do.
func shortIDs(ids []string) []string {
	n := 8
	for ; ; n++ {
		seen := map[string]string{}
		clash := false
		for _, id := range ids {
			p := id[:min(n, len(id))]
			if other, ok := seen[p]; ok && other != id {
				clash = true
				break
			}
			seen[p] = id
		}
		if !clash {
			break
		}
	}
	out := make([]string, len(ids))
	for k, id := range ids {
		out[k] = id[:min(n, len(id))]
	}
	return out
}

// snippet writes a hit's snippet on one line: whitespace and line breaks
// as single spaces, control characters made printable (a message's escape
// sequence must not reach the terminal), matches in bold or in
// [brackets], cut to room columns (0: no limit) with "…" — at the front
// too when the first match would fall beyond the first third.
func snippet(parts []wire.SnippetPart, room int, bold bool) string {
	on, off := "[", "]"
	markCols := 2
	if bold {
		on, off, markCols = "\x1b[1m", "\x1b[22m", 0
	}
	pieces := onOneLine(parts)
	if room > 0 {
		pieces = toFirstMatch(pieces, room, markCols)
	}
	var b strings.Builder
	used := 0
	for _, p := range pieces {
		text, cols := p.Text, termtext.Width(p.Text)
		if p.Match {
			cols += markCols
		}
		cut := room > 0 && used+cols > room
		if cut {
			left := room - used
			if p.Match {
				left -= markCols
			}
			if left < 2 { // "[…]" would say less than "…"
				b.WriteString("…")
				break
			}
			text = termtext.Cut(text, left)
		}
		if p.Match {
			text = on + text + off
		}
		b.WriteString(text)
		used += cols
		if cut {
			break
		}
	}
	return b.String()
}

// onOneLine is parts made printable on one line (oneLine), without
// leading or trailing spaces or empty parts.
func onOneLine(parts []wire.SnippetPart) []wire.SnippetPart {
	var out []wire.SnippetPart
	space := true // at the start: leading whitespace is dropped
	for _, p := range parts {
		if text := oneLine(p.Text, &space); text != "" {
			out = append(out, wire.SnippetPart{Text: text, Match: p.Match})
		}
	}
	if n := len(out); n > 0 {
		if out[n-1].Text = strings.TrimRight(out[n-1].Text, " "); out[n-1].Text == "" {
			out = out[:n-1]
		}
	}
	return out
}

// toFirstMatch drops text before the first match, for "…", when the
// snippet does not fit room and the match would start beyond its first
// third: a snippet cut before its match would not show why it is a hit.
func toFirstMatch(pieces []wire.SnippetPart, room, markCols int) []wire.SnippetPart {
	first := slices.IndexFunc(pieces, func(p wire.SnippetPart) bool { return p.Match })
	if first <= 0 {
		return pieces
	}
	total, before := 0, ""
	for k, p := range pieces {
		total += termtext.Width(p.Text)
		if p.Match {
			total += markCols
		}
		if k < first {
			before += p.Text
		}
	}
	keep := room / 3
	if total <= room || keep < 2 || termtext.Width(before) <= keep {
		return pieces
	}
	rs := []rune(before)
	k, cols := len(rs), 1 // the "…"
	for k > 0 && cols+termtext.Width(string(rs[k-1])) <= keep {
		k--
		cols += termtext.Width(string(rs[k]))
	}
	return append([]wire.SnippetPart{{Text: "…" + string(rs[k:])}}, pieces[first:]...)
}

// oneLine makes text printable on one line: runs of whitespace and line
// breaks become one space, none after a space already written (*space,
// carried from part to part).
func oneLine(text string, space *bool) string {
	var b strings.Builder
	for _, r := range text {
		if unicode.IsSpace(r) || r == 0x2028 || r == 0x2029 {
			if !*space {
				b.WriteByte(' ')
			}
			*space = true
			continue
		}
		b.WriteRune(r)
		*space = false
	}
	return tree.Printable(b.String())
}

// treeLines fetches the session of each hit once and returns the hits'
// lines of pi-ctl tree (the default leaf marked), cut to width.
func treeLines(ctx context.Context, b backend, hits []wire.SearchHit, width int) (map[[2]string]string, error) {
	want := map[string]map[int]string{} // session → entry index → entry id
	files := map[string]*tree.File{}
	for _, h := range hits {
		f, ok := files[h.SessionID]
		if !ok {
			data, err := b.do(ctx, wire.ExportRequest{SessionID: h.SessionID})
			if err != nil {
				return nil, err
			}
			if f, err = tree.Read(data, tree.ReadOptions{}); err != nil {
				return nil, fmt.Errorf("export of %s: %v", h.SessionID, err)
			}
			files[h.SessionID], want[h.SessionID] = f, map[int]string{}
		}
		i, ok := f.Index(h.EntryID)
		if !ok {
			return nil, fmt.Errorf("session %s holds no entry %s, which the search found", h.SessionID, h.EntryID)
		}
		want[h.SessionID][i] = h.EntryID
	}
	lines := map[[2]string]string{}
	for sid, f := range files {
		for i, line := range termtext.TreeLines(f.Session, f.Tree(), f.Len()-1, "← leaf", width) {
			if id, ok := want[sid][i]; ok {
				lines[[2]string{sid, id}] = line
			}
		}
	}
	return lines, nil
}
