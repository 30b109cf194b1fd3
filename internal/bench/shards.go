package bench

import (
	"fmt"
	"slices"
)

// shardsSuffix names a shard count in row and figure names.
func shardsSuffix(s int) string {
	if s == 1 {
		return ", 1 shard"
	}
	return fmt.Sprintf(", %d shards", s)
}

// MergeShards joins the results of one scenario run at each of shards
// shard counts (the same options, a node of its own each) into one: every
// row and figure named with its shard count, and for every row at more
// than one shard a figure of its rate over the same row's at one shard
// (the scaling; held to 1.5× at 4 shards for the node's API rows). With
// one shard count it is that result.
func MergeShards(results []*Result, shards []int) *Result {
	if len(results) == 1 {
		return results[0]
	}
	out := &Result{Scenario: results[0].Scenario}
	out.Params = append(out.Params, results[0].Params...)
	out.param("shards", shards)
	base := map[string]float64{} // row name -> its rate at 1 shard
	for i, res := range results {
		s := shards[i]
		for _, r := range res.Rows {
			name := r.Name
			r.Name += shardsSuffix(s)
			if r.Vs != "" {
				r.Vs += shardsSuffix(s)
			}
			out.Rows = append(out.Rows, r)
			if s == 1 {
				base[name] = r.Rate
				continue
			}
			if b := base[name]; b > 0 {
				fig := "scaling, " + name + shardsSuffix(s) + " / 1 shard"
				if s == 4 && r.Kind == KindNode {
					out.target(fig, r.Rate/b, "×", 1.5, true)
				} else if r.Kind != KindBaseline {
					out.figure(fig, r.Rate/b, "×")
				}
			}
		}
		for _, f := range res.Figures {
			f.Name += shardsSuffix(s)
			out.Figures = append(out.Figures, f)
		}
		for _, n := range res.Notes {
			if !slices.Contains(out.Notes, n) {
				out.Notes = append(out.Notes, n)
			}
		}
	}
	if shards[0] != 1 {
		out.note("shards: no run at 1 shard, so no scaling figures (give --shards 1,... first)")
	}
	return out
}
