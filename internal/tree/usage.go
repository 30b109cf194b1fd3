package tree

import (
	"math"
	"sort"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// UsageTotal is one row of pi 1.1's usage breakdown: the cost and tokens
// spent under a key ("provider/model", or "Tools/summaries").
type UsageTotal struct {
	Key    string
	Cost   float64 // the sum of usage.cost.total
	Tokens float64 // input + output + cacheRead + cacheWrite
}

// toolsKey is where pi books the usage of tool results and summaries.
const toolsKey = "Tools/summaries"

// UsageBreakdown is pi 1.1's getUsageCostBreakdown over every entry of
// the session, on any branch: assistant messages under
// provider/(responseModel ?? model), usage entries under provider/model,
// tool results, branch summaries and compactions that carry usage under
// "Tools/summaries". Rows with neither cost nor tokens are left out; the
// rest are sorted by cost, highest first (ties keep the order of their
// first entry). Sums are IEEE doubles added in file order, as pi adds them.
func (s *Session) UsageBreakdown() []UsageTotal {
	type totals struct{ input, output, cacheRead, cacheWrite, cost float64 }
	var keys []string
	byKey := map[string]*totals{}
	for i := range s.entries {
		e := &s.entries[i]
		var key string
		var usage []byte
		switch e.Kind {
		case KindMessage:
			if e.Role != RoleAssistant && e.Role != RoleToolResult {
				continue
			}
			f := messageFields(e.field(fMessage))
			usage = f["usage"]
			if e.Role == RoleToolResult {
				key = toolsKey
				break
			}
			model := f["responseModel"]
			if model == nil || string(model) == "null" {
				model = f["model"]
			}
			key = jsjson.ToString(f["provider"]) + "/" + jsjson.ToString(model)
		case KindUsage:
			f := messageFields(e.Raw)
			key = jsjson.ToString(f["provider"]) + "/" + jsjson.ToString(f["model"])
			usage = f["usage"]
		case KindBranchSummary, KindCompaction:
			key, usage = toolsKey, messageFields(e.Raw)["usage"]
		default:
			continue
		}
		if !jsjson.Truthy(usage) {
			continue
		}
		t := byKey[key]
		if t == nil {
			t = &totals{}
			byKey[key] = t
			keys = append(keys, key)
		}
		u := messageFields(usage)
		t.input += jsNumber(u["input"])
		t.output += jsNumber(u["output"])
		t.cacheRead += jsNumber(u["cacheRead"])
		t.cacheWrite += jsNumber(u["cacheWrite"])
		t.cost += jsNumber(messageFields(u["cost"])["total"])
	}
	out := make([]UsageTotal, 0, len(keys))
	for _, k := range keys {
		t := byKey[k]
		row := UsageTotal{Key: k, Cost: t.cost, Tokens: t.input + t.output + t.cacheRead + t.cacheWrite}
		if row.Cost > 0 || row.Tokens > 0 {
			out = append(out, row)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Cost > out[j].Cost })
	return out
}

// jsNumber is the number a JSON value adds as in JavaScript's +=: null
// and false 0, true 1, anything else but a number NaN (a string would
// concatenate in pi; no usage pi writes holds one).
func jsNumber(raw []byte) float64 {
	switch string(raw) {
	case "null", "false":
		return 0
	case "true":
		return 1
	}
	if f, ok := jsjson.ParseNumber(raw); ok {
		return f
	}
	return math.NaN()
}

// AppendUsageJSON appends the breakdown as pi returns it:
// [{"key","cost","tokens"}].
func AppendUsageJSON(dst []byte, rows []UsageTotal) []byte {
	dst = append(dst, '[')
	for k, r := range rows {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		dst = jsjson.AppendString(dst, r.Key)
		dst = append(dst, `,"cost":`...)
		dst = appendJSNumber(dst, r.Cost)
		dst = append(dst, `,"tokens":`...)
		dst = appendJSNumber(dst, r.Tokens)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendJSNumber writes f as JSON.stringify does (NaN and infinities as null).
func appendJSNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return append(dst, jsjson.FormatNumber(f)...)
}
