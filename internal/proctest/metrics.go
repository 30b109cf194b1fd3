package proctest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Metrics reads a pi-node's /metrics at base (with ProbeClient): every
// series, keyed as Series makes the key, and its value.
func Metrics(base string) (map[string]float64, error) {
	st, _, body, err := Do(context.Background(), ProbeClient, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if st != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %d %.300s", base, st, body)
	}
	return ParseMetrics(body)
}

// ParseMetrics reads Prometheus' text format: each sample line's series
// (`name{label="value",...}` as written, labels in name order, which is
// how client_golang writes them) and its value.
func ParseMetrics(text []byte) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// Series is the key of a series in Metrics' map: name and its labels,
// given as pairs (label, value, ...).
func Series(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	// By label name, as client_golang writes them: sorting the joined
	// pairs would put a1="…" before a="…" ('1' sorts before '=').
	type pair struct{ name, value string }
	var pairs []pair
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, pair{labels[i], labels[i+1]})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].name < pairs[j].name })
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p.name + "=" + strconv.Quote(p.value)
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// SplitSeries takes a key of Metrics' map apart: the metric's name and
// its labels.
func SplitSeries(key string) (string, map[string]string, error) {
	name, rest, ok := strings.Cut(key, "{")
	labels := map[string]string{}
	if !ok {
		return name, labels, nil
	}
	rest, ok = strings.CutSuffix(rest, "}")
	for ok && rest != "" {
		var label string
		label, rest, ok = strings.Cut(rest, "=")
		if !ok {
			break
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", nil, fmt.Errorf("series %q: %w", key, err)
		}
		if labels[label], err = strconv.Unquote(q); err != nil {
			return "", nil, fmt.Errorf("series %q: %w", key, err)
		}
		rest = strings.TrimPrefix(rest[len(q):], ",")
	}
	if !ok {
		return "", nil, fmt.Errorf("series %q: not name{label=\"value\",...}", key)
	}
	return name, labels, nil
}
