package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func (a *app) minersCmd() *cobra.Command {
	var limit int
	var all bool
	c := &cobra.Command{
		Use: "miners", Short: "The miners as miner-sync's last good sync saw them", Args: exactArgs(0),
		Example: "  drover miners\n  drover miners --all -o json",
		RunE: func(*cobra.Command, []string) error {
			q := limitQuery(limit)
			if !all {
				q.Set("active", "true")
			}
			raw, err := a.api.call(a.ctx, request{op: opListMiners, query: q})
			if err != nil {
				return err
			}
			return a.out.list(raw, cols("uid", "uid", "hotkey", "hotkey", "ip", "ip", "port", "port", "stake", "stake",
				"validator", "is_validator", "serving", "serving", "active", "active", "last seen", "last_seen"))
		},
	}
	c.Flags().IntVar(&limit, "limit", 1000, "most miners to list (1 to 1000)")
	c.Flags().BoolVar(&all, "all", false, "deregistered miners too")
	return c
}

var syncColumns = cols("id", "id", "at", "at", "reason", "reason", "outcome", "outcome", "block", "block",
	"entries", "entries", "upserted", "upserted", "deactivated", "deactivated", "skipped", "skipped", "error", "error")

func (a *app) syncCmd() *cobra.Command {
	var events bool
	var limit int
	c := &cobra.Command{
		Use:   "sync",
		Short: "Sync the metagraph now (miner-sync); --events lists the recent syncs",
		Long: `sync enqueues a metagraph sync (at most one waits or runs: while one does, that one is
shown) and prints its job. With --events it lists the recent syncs instead, newest first, each
with the block it read and its outcome.`,
		Example: "  drover sync\n  drover sync --events --limit 5",
		Args:    exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			if events {
				raw, err := a.api.call(a.ctx, request{op: opListSyncEvents, query: limitQuery(limit)})
				if err != nil {
					return err
				}
				return a.out.list(raw, syncColumns)
			}
			raw, err := a.api.call(a.ctx, request{op: opStartSync})
			if err != nil {
				return err
			}
			return a.out.record(raw, cols("sync job", "job_id", "state", "state", "already queued", "already_queued"))
		},
	}
	c.Flags().BoolVar(&events, "events", false, "list the recent syncs instead")
	c.Flags().IntVar(&limit, "limit", 20, "with --events: most syncs to list")
	return c
}

func (a *app) weightsCmd() *cobra.Command {
	var batch int64
	c := &cobra.Command{
		Use:   "weights",
		Short: "The weights scorer serves (normalised and as u16), or one batch's scores",
		Example: `  drover weights
  drover weights --batch 3 -o json`,
		Args: exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			if batch > 0 {
				raw, err := a.api.call(a.ctx, request{op: opGetBatchScores, params: []string{strconv.FormatInt(batch, 10)}})
				if err != nil {
					return err
				}
				return a.printWeights(raw, "miners", cols("hotkey", "hotkey", "score", "score", "weight", "weight", "u16", "weight_u16", "dancing", "dancing", "non-peak", "non_peak"))
			}
			raw, err := a.api.call(a.ctx, request{op: opGetWeights})
			if err != nil {
				return err
			}
			return a.printWeights(raw, "weights", cols("hotkey", "hotkey", "weight", "weight", "u16", "weight_u16"))
		},
	}
	c.Flags().Int64Var(&batch, "batch", 0, "show this batch's per-miner scores instead")
	return c
}

// printWeights prints the batch the weights come from, then its list under key.
func (a *app) printWeights(raw []byte, key string, columns []column) error {
	if a.out.json {
		return a.out.raw(raw)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	fmt.Fprintf(a.out.w, "batch %s (started %s, peak %s)\n\n", format(doc["batch_id"]), format(doc["started_at"]), format(doc["peak"]))
	var items []map[string]any
	list, _ := doc[key].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			items = append(items, m)
		}
	}
	a.out.table(items, columns)
	return nil
}

func (a *app) submissionsCmd() *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use: "submissions", Short: "Every attempt to set the weights on chain, newest first (scorer)", Args: exactArgs(0),
		Example: "  drover submissions --limit 5",
		RunE: func(*cobra.Command, []string) error {
			raw, err := a.api.call(a.ctx, request{op: opListWeightSubmissions, query: limitQuery(limit)})
			if err != nil {
				return err
			}
			return a.out.list(raw, cols("id", "id", "at", "at", "reason", "reason", "batch", "batch_id", "via", "via",
				"outcome", "outcome", "block", "block", "unregistered", "unregistered", "error", "error"))
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "most submissions to list (1 to 1000)")
	return c
}
