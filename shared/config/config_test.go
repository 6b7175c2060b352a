package config

import (
	"bytes"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type testSpec struct {
	Common
	HTTPAddr string `envconfig:"HTTP_ADDR" default:":8080" desc:"listen address"`
}

func TestLoadHelpListsEveryVariable(t *testing.T) {
	t.Parallel()

	var out bytes.Buffer
	err := Load("SCORER", &testSpec{}, []string{"--help"}, &out)
	require.ErrorIs(t, err, ErrHelp)
	for _, want := range []string{"SCORER_DATABASE_URL", "SCORER_HTTP_ADDR", ":8080", "SCORER_API_TOKENS", "(required)", "SCORER_SHUTDOWN_TIMEOUT", "30s"} {
		require.Contains(t, out.String(), want)
	}
}

func TestLoadRejectsStrayArguments(t *testing.T) {
	t.Parallel()

	err := Load("SCORER", &testSpec{}, []string{"serve"}, &bytes.Buffer{})
	require.ErrorContains(t, err, "unexpected arguments")
}

func TestMaskedHidesSecrets(t *testing.T) {
	t.Parallel()

	spec := testSpec{HTTPAddr: ":9"}
	spec.DatabaseURL = "postgres://drover:hunter2@db:5432/drover"
	spec.APITokens = []string{"tok-1"}
	got := map[string]string{}
	for _, a := range Masked(&spec) {
		got[a.Key] = a.Value.String()
	}
	require.Equal(t, "postgres://drover:xxxxx@db:5432/drover", got["DATABASE_URL"])
	require.Equal(t, "(set)", got["API_TOKENS"])
	require.Equal(t, ":9", got["HTTP_ADDR"])
	require.NotContains(t, slog.GroupValue(Masked(&spec)...).String(), "hunter2")
	require.NotContains(t, slog.GroupValue(Masked(&spec)...).String(), "tok-1")
}

func TestPoolSizeIsTheSettingElseTheProcessShare(t *testing.T) {
	t.Parallel()
	require.Equal(t, int32(14), Common{}.PoolSize("POPULATE_WORKER"))
	require.Equal(t, int32(3), Common{DBMaxConns: 3}.PoolSize("POPULATE_WORKER"))
	require.Equal(t, int32(0), Common{}.PoolSize("UNKNOWN"), "pgx's default")
	require.Equal(t, int32(15), Common{}.ProcessConns("POPULATE_WORKER"), "the pool and River's listener")
	var processes int
	for prefix := range DBBudget {
		processes += int(Common{}.ProcessConns(prefix))
	}
	require.LessOrEqual(t, processes+MigrateConns, UsableConns-40,
		"the whole stack fits a default Postgres (100, 3 reserved for superusers) beside 40 other connections")
	require.LessOrEqual(t, 2*processes+MigrationsConns(len(DBBudget)), UsableConns,
		"a rollout of every Deployment with one surge pod, during the migrate Jobs, fits a default Postgres")
}

func TestMigrationsConnsCountsOneRunningAndTheRestWaiting(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, MigrationsConns(0))
	require.Equal(t, MigrateConns, MigrationsConns(1))
	require.Equal(t, MigrateConns+5*MigrateWaitConns, MigrationsConns(6))
}

func TestLoadNamesEveryVariableThatFails(t *testing.T) {
	t.Setenv("CHECKCFG_DATABASE_URL", "")
	t.Setenv("CHECKCFG_DB_MAX_CONNS", "many")
	t.Setenv("CHECKCFG_SHUTDOWN_TIMEOUT", "soon")
	t.Setenv("CHECKCFG_HTTP_ADDR", ":9")
	var spec testSpec
	err := Load("CHECKCFG", &spec, nil, &bytes.Buffer{})
	require.Error(t, err)
	for _, want := range []string{
		`CHECKCFG_DB_MAX_CONNS (or DB_MAX_CONNS): "many" does not parse as int32`,
		`CHECKCFG_SHUTDOWN_TIMEOUT (or SHUTDOWN_TIMEOUT): "soon" does not parse as time.Duration`,
		`CHECKCFG_DATABASE_URL (or DATABASE_URL): required, set but empty`,
	} {
		require.ErrorContains(t, err, want)
	}
	// The rest is read, and a field that failed has its default.
	require.Equal(t, ":9", spec.HTTPAddr)
	require.Equal(t, int32(0), spec.DBMaxConns)
	require.Equal(t, 30*time.Second, spec.ShutdownTimeout)
}

func TestLoadNamesAMissingRequiredVariable(t *testing.T) {
	t.Parallel()
	var spec testSpec
	err := Load("CHECKCFG_NONE", &spec, nil, &bytes.Buffer{})
	if _, set := os.LookupEnv("DATABASE_URL"); set {
		require.NoError(t, err) // the unprefixed fallback is set in this environment
		return
	}
	require.ErrorContains(t, err, "CHECKCFG_NONE_DATABASE_URL (or DATABASE_URL): required, not set")
}

func TestDefaultsAreWhatLoadReadsFromAnEmptyEnvironment(t *testing.T) {
	t.Setenv("DEFAULTSTEST_DATABASE_URL", "postgres://db/x")
	var loaded, defaults testSpec
	require.NoError(t, Load("DEFAULTSTEST", &loaded, nil, &bytes.Buffer{}))
	require.NoError(t, Defaults(&defaults))
	defaults.DatabaseURL = "postgres://db/x"
	require.Equal(t, loaded, defaults)
	require.Equal(t, ":8080", defaults.HTTPAddr)
	require.Equal(t, 30*time.Second, defaults.ShutdownTimeout)
}

func TestDefaultsNamesATagThatDoesNotParse(t *testing.T) {
	t.Parallel()

	var spec struct {
		Wait time.Duration `envconfig:"WAIT" default:"soon"`
	}
	require.ErrorContains(t, Defaults(&spec), "Wait: default")
}
