package service

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/shared/config"
)

type checkSpec struct {
	config.Common
	Port int `envconfig:"PORT" default:"1"`
}

func (c checkSpec) Check() []error {
	if c.Port > 100 {
		return []error{errors.New("CHECKSVC_PORT: above 100")}
	}
	return nil
}

func TestCheckConfigNamesEveryProblemAndNeverRuns(t *testing.T) {
	t.Setenv("CHECKSVC_DATABASE_URL", "postgres://u:p@db:5432/x?sslmode=nope-not-a-mode")
	t.Setenv("CHECKSVC_API_TOKENS", "")
	t.Setenv("CHECKSVC_AUTH_DISABLED", "false")
	t.Setenv("CHECKSVC_LOG_FORMAT", "xml")
	t.Setenv("CHECKSVC_DB_MAX_CONNS", "1")
	t.Setenv("CHECKSVC_PORT", "101")
	ran := false
	run := func(context.Context, io.Writer) error { ran = true; return nil }
	var spec checkSpec
	err := mainErr(t.Context(), "CHECKSVC", &spec, []string{ModeCheckConfig}, io.Discard, run)
	require.False(t, ran)
	var got []string
	for _, p := range Problems(err) {
		got = append(got, p.Error())
	}
	require.Len(t, got, 5, "%q", got)
	for i, want := range []string{
		"CHECKSVC_DATABASE_URL (or DATABASE_URL): not a Postgres connection string",
		"CHECKSVC_API_TOKENS (or API_TOKENS): no API tokens",
		"CHECKSVC_LOG_FORMAT (or LOG_FORMAT)",
		"CHECKSVC_DB_MAX_CONNS (or DB_MAX_CONNS): a pool of 1",
		"CHECKSVC_PORT: above 100",
	} {
		require.Contains(t, got[i], want)
	}
	require.NotContains(t, err.Error(), "u:p@", "the password stays out of the message")

	// The same problems stop a start.
	err = mainErr(t.Context(), "CHECKSVC", &checkSpec{}, nil, io.Discard, run)
	require.Len(t, Problems(err), 5)
	require.False(t, ran)
}

func TestCheckConfigOK(t *testing.T) {
	t.Setenv("CHECKOK_DATABASE_URL", "postgres://u:p@db:5432/x")
	t.Setenv("CHECKOK_API_TOKENS", "t1,t2")
	var out bytes.Buffer
	run := func(context.Context, io.Writer) error { t.Fatal("check-config must not run the service"); return nil }
	require.NoError(t, mainErr(t.Context(), "CHECKOK", &checkSpec{}, []string{ModeCheckConfig}, &out, run))
	require.Equal(t, "checkok: configuration OK; Postgres connections: pgx's default pool + River's listener\n", out.String())

	t.Setenv("CHECKOK_DB_MAX_CONNS", "5")
	out.Reset()
	require.NoError(t, mainErr(t.Context(), "CHECKOK", &checkSpec{}, []string{ModeCheckConfig}, &out, run))
	require.Equal(t, "checkok: configuration OK; Postgres connections: at most 6 (pool 5 + River's listener 1)\n", out.String())
}

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	require.NoError(t, Healthcheck(t.Context(), []string{srv.URL + "/readyz"}))
	ready = false
	require.ErrorContains(t, Healthcheck(t.Context(), []string{srv.URL + "/readyz"}), "503")
	require.ErrorContains(t, Healthcheck(t.Context(), nil), "usage")
}

func TestHealthcheckFindsTheConfiguredAddress(t *testing.T) {
	t.Parallel()
	type withAddr struct {
		config.Common
		HTTPAddr string
	}
	require.Equal(t, "http://127.0.0.1:8083/readyz", readyzURL(&withAddr{HTTPAddr: ":8083"}))
	require.Equal(t, "http://127.0.0.1:8083/readyz", readyzURL(&withAddr{HTTPAddr: "0.0.0.0:8083"}))
	require.Equal(t, "http://10.1.2.3:8083/readyz", readyzURL(&withAddr{HTTPAddr: "10.1.2.3:8083"}))
	require.Equal(t, "http://127.0.0.1:8080/readyz", readyzURL(&checkSpec{}))
}
