package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

var tableColumns = cols("name", "name", "source", "source", "target", "target", "key", "primary_key", "make", "make", "upstream", "upstream")

// tablesCmd lists the computed tables with where each definition comes from, and defines and
// retires them as PUT and DELETE /v1/tables/{name} do, with the admin scope's token.
func (a *app) tablesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tables",
		Short: "Computed tables (populate-worker): list them, define them from a file, retire them",
		Long: `tables lists populate-worker's computed tables, with where each definition comes from: code
(the service's own), file (its TABLES_FILE) or api (defined over the API). apply and delete
define and retire tables over the API, which every replica follows within moments, without a
restart; they take a token of the admin scope (POPULATE_WORKER_ADMIN_TOKENS): --admin-token,
DROVER_ADMIN_TOKEN or admin_token in the config file, else the token.`,
		Example: `  drover tables
  drover tables apply tables.json            # a TABLES_FILE: a JSON (or YAML) array of definitions
  drover tables delete lab_session_stats     # retire it: its jobs and rows stay readable`,
		Args: exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			raw, err := a.api.call(a.ctx, request{op: opListTables})
			if err != nil {
				return err
			}
			return a.out.list(raw, tableColumns)
		},
	}
	cmd.AddCommand(a.tablesApplyCmd(), a.tablesDeleteCmd())
	return cmd
}

func (a *app) tablesApplyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "apply FILE",
		Short: "Define or replace computed tables from a file, as PUT /v1/tables/{name} does (admin scope)",
		Long: `apply reads FILE ("-": stdin), a TABLES_FILE: a JSON or YAML array of definitions (name, target,
primary_key, key_source, upstream, function_url, function_secret_env, auto_schedule), or one
definition, and puts each in turn. A definition the worker refuses stops it with the problem,
naming the field (exit 4); those before it are applied.`,
		Example: "  drover tables apply tables.json\n  python3 -m drover tables lab.pipeline --url http://makes:8090 | drover tables apply -",
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			defs, err := readDefinitions(args[0])
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			var put []map[string]any
			for _, d := range defs {
				raw, err := a.api.call(a.ctx, request{op: opPutTable, params: []string{d.name}, body: d.body, admin: true})
				if err != nil {
					return naming(d.name, err)
				}
				var t map[string]any
				if err := json.Unmarshal(raw, &t); err != nil {
					return fmt.Errorf("decode %s: %w", opPutTable.id, err)
				}
				put = append(put, t)
			}
			if a.out.json {
				return a.out.value(put)
			}
			a.out.table(put, tableColumns)
			return nil
		},
	}
}

func (a *app) tablesDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME",
		Short:   "Retire a computed table, as DELETE /v1/tables/{name} does (admin scope): its jobs and rows stay",
		Example: "  drover tables delete lab_session_stats",
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if _, err := a.api.call(a.ctx, request{op: opRetireTable, params: args, admin: true}); err != nil {
				return err
			}
			if a.out.json {
				return a.out.value(map[string]any{"name": args[0], "retired": true})
			}
			fmt.Fprintf(a.out.w, "retired %s: no replica schedules or makes its keys; its jobs and rows stay\n", args[0])
			return nil
		},
	}
}

// naming prefixes err with the table it is about, keeping the exit code it carries.
func naming(table string, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.code, err: fmt.Errorf("table %s: %w", table, ee.err), quiet: ee.quiet}
	}
	return fmt.Errorf("table %s: %w", table, err)
}

// definition is one entry of a tables file: its name and the body to put.
type definition struct {
	name string
	body json.RawMessage
}

// readDefinitions reads a tables file (path, or stdin for "-"), JSON or YAML: an array of
// definitions or one, each with its name.
func readDefinitions(path string) ([]definition, error) {
	doc, err := readJSONOrYAML(path)
	if err != nil {
		return nil, err
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(doc, &entries); err != nil {
		entries = []json.RawMessage{doc}
	}
	out := make([]definition, 0, len(entries))
	for i, e := range entries {
		var named struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(e, &named); err != nil || named.Name == "" {
			return nil, fmt.Errorf("%s: definition %d has no name", path, i)
		}
		out = append(out, definition{name: named.Name, body: e})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s defines no table", path)
	}
	return out, nil
}
