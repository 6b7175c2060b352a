package populate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/queue"
	"drover.dev/shared/problem"
)

// replica is another engine on b's database, with a registry of its own holding tables: what a
// second replica of the service knows.
func (b *testBundle) replica(t *testing.T, tables ...Table) *Engine {
	t.Helper()
	ins, err := queue.NewInserter(b.pool, queue.PopulateWorker)
	require.NoError(t, err)
	reg := NewRegistry()
	for _, tb := range tables {
		require.NoError(t, reg.Register(tb))
	}
	require.NoError(t, reg.Check(b.ctx, b.pool))
	return NewEngine(b.pool, ins, reg, testConfig(Config{}))
}

// apiTable is a definition of an HTTP-made table over src, as PUT /v1/tables/{name} takes it.
func apiTable(name string) Table {
	return Table{Name: name, Target: "dst2", PrimaryKey: []string{"a", "b"}, KeySource: "SELECT a, b FROM src",
		Upstream: []string{"src"}, FunctionURL: "http://makes.example/make/" + name}
}

// A table defined through one replica is stored with its source, announced on populate_tables in
// the transaction that writes it, and found by another replica that has not heard of it yet;
// retired, it is gone from both, and a name of the code can be neither replaced nor retired.
func TestPutAndRetireTable(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	_, err := b.pool.Exec(b.ctx, `CREATE TABLE dst2 (a int, b int, x int, PRIMARY KEY (a, b))`)
	require.NoError(t, err)
	listener, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer listener.Release()
	_, err = listener.Exec(b.ctx, "LISTEN populate_tables")
	require.NoError(t, err)
	announced := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		n, err := listener.Conn().WaitForNotification(ctx)
		require.NoError(t, err)
		return n.Payload
	}

	tbl, created, err := b.engine.PutTable(b.ctx, apiTable("viaapi"))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, SourceAPI, tbl.Source())
	require.Equal(t, "viaapi", announced())
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'populate_schedule' AND args->>'table' = 'viaapi'`),
		"its keys' schedule is enqueued with it")
	_, created, err = b.engine.PutTable(b.ctx, apiTable("viaapi"))
	require.NoError(t, err)
	require.False(t, created, "a second PUT replaces")
	require.Equal(t, "viaapi", announced())

	other := b.replica(t)
	_, err = other.Tables().Get("viaapi")
	require.ErrorIs(t, err, problem.ErrNotFound, "the other replica has not heard of it")
	found, err := other.Table(b.ctx, "viaapi")
	require.NoError(t, err, "looked up when asked")
	require.Equal(t, SourceAPI, found.Source())
	require.Equal(t, "integer", found.keyKinds["b"].name, "checked before use: its key's types are known")

	require.NoError(t, b.engine.RetireTable(b.ctx, "viaapi"))
	require.Equal(t, "viaapi", announced())
	_, err = b.engine.Table(b.ctx, "viaapi")
	require.ErrorIs(t, err, problem.ErrNotFound)
	require.NoError(t, other.ReloadTable(b.ctx, "viaapi"), "what the notification asks")
	_, err = other.Tables().Get("viaapi")
	require.ErrorIs(t, err, problem.ErrNotFound)
	require.ErrorIs(t, b.engine.RetireTable(b.ctx, "viaapi"), problem.ErrNotFound, "retired already")

	_, _, err = b.engine.PutTable(b.ctx, apiTable("pair"))
	require.Equal(t, problem.Conflict, problem.CodeOf(err), "%v", err)
	require.Equal(t, problem.Conflict, problem.CodeOf(b.engine.RetireTable(b.ctx, "pair")))
}

// A definition the database refutes is a 422 naming the field at fault, and writes nothing.
func TestPutTableNamesTheField(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	_, err := b.pool.Exec(b.ctx, `CREATE TABLE dst2 (a int, b int, x int, PRIMARY KEY (a, b))`)
	require.NoError(t, err)
	b.engine.cfg.Getenv = func(name string) string { return map[string]string{"LAB_SECRET": "s"}[name] }
	for _, tc := range []struct {
		field  string
		change func(*Table)
	}{
		{"name", func(t *Table) { t.Name = "Bad-Name" }},
		{"target", func(t *Table) { t.Target = "nope" }},
		{"target", func(t *Table) { t.Target = "dst2; DROP TABLE jobs" }},
		{"primary_key", func(t *Table) { t.PrimaryKey = []string{"a", "c"} }},
		{"primary_key[1]", func(t *Table) { t.PrimaryKey = []string{"a", "a"} }},
		{"key_source", func(t *Table) { t.KeySource = "SELECT a FROM src" }},
		{"key_source", func(t *Table) { t.KeySource = "SELEC a, b FROM src" }},
		{"key_source", func(t *Table) { t.KeySource = "" }},
		{"upstream[1]", func(t *Table) { t.Upstream = []string{"src", "nope"} }},
		{"function_url", func(t *Table) { t.FunctionURL = "" }},
		{"function_url", func(t *Table) { t.FunctionURL = "ftp://makes/x" }},
		{"function_secret_env", func(t *Table) { t.FunctionSecretEnv = "NOT_SET" }},
		{"function_secret_env", func(t *Table) { t.FunctionSecretEnv = "A-B" }},
	} {
		def := apiTable("bad")
		tc.change(&def)
		_, _, err := b.engine.PutTable(b.ctx, def)
		require.ErrorIs(t, err, ErrInvalidTable, tc.field)
		var pe *problem.Error
		require.ErrorAs(t, err, &pe, tc.field)
		require.Equal(t, problem.Unprocessable, pe.Code, "%s: %v", tc.field, err)
		require.Equal(t, tc.field, pe.Field, "%v", err)
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM table_definitions`), "nothing written")
	def := apiTable("good")
	def.FunctionSecretEnv = "LAB_SECRET"
	_, _, err = b.engine.PutTable(b.ctx, def)
	require.NoError(t, err, "the secret's variable is set here")
}

// The tables file seeds its definitions at start, and a replica that starts later reads them;
// a table the API changed or retired since keeps the API's definition, whatever the file says.
func TestStartTablesSeedsTheFile(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	_, err := b.pool.Exec(b.ctx, `CREATE TABLE dst2 (a int, b int, x int, PRIMARY KEY (a, b))`)
	require.NoError(t, err)
	_, _, err = b.engine.PutTable(b.ctx, apiTable("taken"))
	require.NoError(t, err)
	_, _, err = b.engine.PutTable(b.ctx, apiTable("retired"))
	require.NoError(t, err)
	require.NoError(t, b.engine.RetireTable(b.ctx, "retired"))

	fromFile := func(name, url string) Table {
		tb := apiTable(name)
		tb.FunctionURL, tb.source = url, SourceFile
		return tb
	}
	seeder := b.replica(t, fromFile("seeded", "http://file/seeded"), fromFile("taken", "http://file/taken"),
		fromFile("retired", "http://file/retired"))
	require.NoError(t, seeder.StartTables(b.ctx))
	for name, want := range map[string]string{"seeded": "http://file/seeded", "taken": "http://makes.example/make/taken"} {
		tbl, err := seeder.Tables().Get(name)
		require.NoError(t, err, name)
		require.Equal(t, want, tbl.FunctionURL, name)
	}
	_, err = seeder.Tables().Get("retired")
	require.ErrorIs(t, err, problem.ErrNotFound, "retired over the API: the file does not bring it back")

	later := b.replica(t)
	require.NoError(t, later.LoadTables(b.ctx))
	var sources []string
	for _, tbl := range later.Tables().All() {
		sources = append(sources, tbl.Name+" "+string(tbl.Source()))
	}
	require.Equal(t, []string{"seeded file", "taken api"}, sources)
}
