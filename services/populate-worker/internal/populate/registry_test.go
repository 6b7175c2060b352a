package populate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"drover.dev/shared/postgres"
	"drover.dev/shared/testdb"
)

func TestTableValidate(t *testing.T) {
	t.Parallel()

	noop := func(context.Context, pgx.Tx, Key) ([]Row, error) { return nil, nil }
	good := Table{Name: "t", Target: "lab.dst", PrimaryKey: []string{"a"}, KeySource: "SELECT a FROM src", Make: noop}
	for _, tc := range []struct {
		name   string
		change func(*Table)
		ok     bool
	}{
		{"Good", func(*Table) {}, true},
		{"HTTPMake", func(t *Table) { t.Make, t.FunctionURL = nil, "http://f" }, true},
		{"BadName", func(t *Table) { t.Name = "T-1" }, false},
		{"InjectedTarget", func(t *Table) { t.Target = "dst; DROP TABLE jobs" }, false},
		{"NoKey", func(t *Table) { t.PrimaryKey = nil }, false},
		{"QuotedKeyColumn", func(t *Table) { t.PrimaryKey = []string{`a"`} }, false},
		{"NoKeySource", func(t *Table) { t.KeySource = " " }, false},
		{"NoMake", func(t *Table) { t.Make = nil }, false},
		{"GoAndHTTPMake", func(t *Table) { t.FunctionURL = "http://f" }, false},
		{"FetchWithoutCompute", func(t *Table) {
			t.Make, t.Fetch = nil, func(context.Context, postgres.DBTX, Key) (any, error) { return nil, nil }
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tbl := good
			tc.change(&tbl)
			err := tbl.validate()
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrInvalidTable)
			}
		})
	}
}

func TestRegistryLoadFile(t *testing.T) {
	t.Parallel()

	write := func(t *testing.T, body string) string {
		path := filepath.Join(t.TempDir(), "tables.json")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		return path
	}
	t.Run("RegistersHTTPTables", func(t *testing.T) {
		t.Parallel()
		reg := NewRegistry()
		require.NoError(t, reg.LoadFile(write(t, `[{"name": "energy", "target": "example_signal_energy",
			"primary_key": ["signal_id"], "key_source": "SELECT signal_id FROM example_signal",
			"function_url": "http://127.0.0.1:9/energy"}]`)))
		tbl, err := reg.Get("energy")
		require.NoError(t, err)
		require.Equal(t, "http://127.0.0.1:9/energy", tbl.FunctionURL)
		require.NoError(t, reg.Check(context.Background(), testdb.Tx(t, "populate_worker")))
	})
	t.Run("RequiresAFunction", func(t *testing.T) {
		t.Parallel()
		err := NewRegistry().LoadFile(write(t, `[{"name": "x", "target": "x", "primary_key": ["a"], "key_source": "SELECT 1 AS a"}]`))
		require.ErrorIs(t, err, ErrInvalidTable)
	})
	t.Run("CheckRejectsMissingColumns", func(t *testing.T) {
		t.Parallel()
		reg := NewRegistry()
		require.NoError(t, reg.Register(Table{Name: "x", Target: "example_signal_stats", PrimaryKey: []string{"nope"},
			KeySource: "SELECT signal_id FROM example_signal", FunctionURL: "http://f"}))
		require.ErrorIs(t, reg.Check(context.Background(), testdb.Tx(t, "populate_worker")), ErrInvalidTable)
	})
}
