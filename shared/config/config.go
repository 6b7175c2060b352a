// Package config reads a service's configuration from environment variables with envconfig, one
// prefix per service, and prints it: every variable with its default for --help, and the values in
// force, secrets masked, at start.
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// ErrHelp is returned by Load when the arguments asked for help; the usage has been printed.
var ErrHelp = errors.New("help requested")

// Common holds the settings every service has. Services embed it in their own Config. Each
// variable is read as PREFIX_NAME, falling back to the unprefixed NAME, so DATABASE_URL and
// API_TOKENS can be set once for a whole deployment.
type Common struct {
	DatabaseURL string `envconfig:"DATABASE_URL" required:"true" secret:"true" desc:"Postgres connection string"`

	APITokens    []string `envconfig:"API_TOKENS" secret:"true" desc:"bearer tokens accepted on /v1, comma separated"`
	AuthDisabled bool     `envconfig:"AUTH_DISABLED" default:"false" desc:"serve /v1 and /riverui/ without credentials; for local development only"`
	RiverUIUser  string   `envconfig:"RIVERUI_USER" default:"drover" desc:"user name that logs into River UI at /riverui/ (basic auth); the password is any of API_TOKENS"`

	LogLevel  string `envconfig:"LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
	LogFormat string `envconfig:"LOG_FORMAT" default:"auto" desc:"text, json, or auto (text on a terminal)"`

	BodyLimit         int64         `envconfig:"BODY_LIMIT" default:"1048576" desc:"largest accepted request body in bytes"`
	ReadHeaderTimeout time.Duration `envconfig:"READ_HEADER_TIMEOUT" default:"5s" desc:"time to read a request's headers"`
	ReadTimeout       time.Duration `envconfig:"READ_TIMEOUT" default:"30s" desc:"time to read a whole request"`
	WriteTimeout      time.Duration `envconfig:"WRITE_TIMEOUT" default:"60s" desc:"time to write a response (streams extend it)"`
	IdleTimeout       time.Duration `envconfig:"IDLE_TIMEOUT" default:"120s" desc:"keep-alive idle time"`

	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"30s" desc:"total budget to drain HTTP and stop River on SIGTERM"`
	SoftStopTimeout time.Duration `envconfig:"SOFT_STOP_TIMEOUT" default:"20s" desc:"part of the budget running jobs get to finish before they are cancelled"`

	MaxQueued int `envconfig:"MAX_QUEUED" default:"10000" desc:"jobs waiting in a queue past which its enqueue endpoints answer 429 with Retry-After; 0 for no bound"`

	DBMaxConns int32  `envconfig:"DB_MAX_CONNS" default:"0" desc:"largest size of the Postgres pool (River's listener opens one connection more); 0 is the process's share of the connection budget (miner-sync 4, batch-runner 6, scorer 4, build-scheduler 6, build-worker 4, populate-worker 14)"`
	WorkerID   string `envconfig:"WORKER_ID" desc:"River client id of this replica; host name and start time when empty"`

	LivenessTimeout time.Duration `envconfig:"LIVENESS_TIMEOUT" default:"30s" desc:"how long this process may go without renewing its liveness record (every sixth of it) before any replica declares it dead and gives its running River jobs back; the same in every service"`
}

// DBBudget is each process's share of the connection budget by env prefix: its pool's size when
// <PREFIX>_DB_MAX_CONNS is 0 (unset). Each process opens its pool plus ListenerConns. The shares
// are sized for the worst moment of a Kubernetes deployment: every Deployment rolling with one
// surge pod (two of each process) while the six migrate Jobs run, 2 × (38 + 6) + 8 = 96, within
// a default Postgres's UsableConns (97). The README's "Connection budget" says what each pool
// holds and how to size bigger deployments.
var DBBudget = map[string]int32{
	"MINER_SYNC":      4,
	"BATCH_RUNNER":    6,
	"SCORER":          4,
	"BUILD_SCHEDULER": 6,
	"BUILD_WORKER":    4,
	"POPULATE_WORKER": 14,
}

// ListenerConns is what a process opens beyond its pool: River's listener takes a pooled
// connection and hijacks it for good (riverpgxv5), so the pool opens another in its place.
const ListenerConns = 1

// MigrateConns is the most connections a migration holds at once: the advisory lock's, River's
// migrations and grants', and goose's.
const MigrateConns = 3

// MigrateWaitConns is what a migration waiting for another's advisory lock holds meanwhile.
const MigrateWaitConns = 1

// UsableConns is what a default Postgres lets non-superusers open: max_connections (100) minus
// superuser_reserved_connections (3).
const UsableConns = 97

// MigrationsConns is the most connections n migrations started together hold at once: one runs
// (MigrateConns), the others wait for its lock.
func MigrationsConns(n int) int {
	if n <= 0 {
		return 0
	}
	return MigrateConns + (n-1)*MigrateWaitConns
}

// ProcessConns is what a process with env prefix opens at most: its pool and River's listener.
func (c Common) ProcessConns(prefix string) int32 {
	return c.PoolSize(prefix) + ListenerConns
}

// PoolSize is the pool size of the process with env prefix: DB_MAX_CONNS when set, else the
// process's share of the budget (DBBudget), else pgx's default (0).
func (c Common) PoolSize(prefix string) int32 {
	if c.DBMaxConns > 0 {
		return c.DBMaxConns
	}
	return DBBudget[prefix]
}

// Load fills spec (a pointer to a struct embedding Common) from the environment with the given
// prefix. When args ask for help (-h, --help, help) it prints every variable with its default to
// out and returns ErrHelp.
func Load(prefix string, spec any, args []string, out io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" || a == "help" {
			if err := Usage(prefix, spec, out); err != nil {
				return err
			}
			return ErrHelp
		}
	}
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q: configuration comes from the environment (see --help)", args)
	}
	if errs := variableProblems(prefix, spec); len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := envconfig.Process(prefix, spec); err != nil {
		return fmt.Errorf("read %s_* environment: %w", prefix, err)
	}
	return nil
}

// variableProblems reads each variable of spec on its own into spec and returns one error per
// variable that is required and missing or does not parse: envconfig.Process stops at the first,
// and a configuration check must name them all. Each field is read through a one-field struct
// with the field's own type and tags, so the rules are envconfig's exactly; a field that does
// not parse gets its default, so that the checks after loading see no invented zero.
func variableProblems(prefix string, spec any) []error {
	var errs []error
	err := eachSetting(spec, func(f reflect.StructField, field reflect.Value) {
		one := reflect.New(reflect.StructOf([]reflect.StructField{{Name: f.Name, Type: f.Type, Tag: f.Tag}}))
		err := envconfig.Process(prefix, one.Interface())
		if err == nil && f.Tag.Get("required") == "true" && one.Elem().Field(0).IsZero() {
			err = errEmpty // set to "": envconfig accepts it, nothing that requires it can use it
		}
		if err == nil {
			field.Set(one.Elem().Field(0))
			return
		}
		errs = append(errs, variableError(prefix, f, err))
		_ = defaultOf(f, field) // a default that does not parse is the tag's bug, named by Defaults
	})
	if err != nil {
		return []error{err}
	}
	return errs
}

// eachSetting calls fn with every field of spec (a pointer to a struct) that envconfig reads,
// the fields of embedded settings structs (Common) included, as envconfig walks them.
func eachSetting(spec any, fn func(f reflect.StructField, field reflect.Value)) error {
	v := reflect.ValueOf(spec)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return envconfig.ErrInvalidSpecification
	}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("ignored") == "true" {
				continue
			}
			if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("envconfig") == "" {
				walk(v.Field(i)) // embedded settings (Common) share the prefix, as envconfig reads them
				continue
			}
			fn(f, v.Field(i))
		}
	}
	walk(v.Elem())
	return nil
}

var errEmpty = errors.New("required variable set but empty")

// variableError names the variable a field is read from, with its unprefixed fallback.
func variableError(prefix string, f reflect.StructField, err error) error {
	name := strings.ToUpper(f.Tag.Get("envconfig"))
	key := strings.ToUpper(prefix + "_" + f.Name)
	if name != "" {
		key = fmt.Sprintf("%s_%s (or %s)", prefix, name, name)
	}
	var perr *envconfig.ParseError
	switch {
	case errors.As(err, &perr) && f.Tag.Get("secret") == "true":
		return fmt.Errorf("%s: does not parse as %s: %w", key, perr.TypeName, perr.Err)
	case errors.As(err, &perr):
		return fmt.Errorf("%s: %q does not parse as %s: %w", key, perr.Value, perr.TypeName, perr.Err)
	case errors.Is(err, errEmpty):
		return fmt.Errorf("%s: required, set but empty (%s)", key, f.Tag.Get("desc"))
	case f.Tag.Get("required") == "true":
		return fmt.Errorf("%s: required, not set (%s)", key, f.Tag.Get("desc"))
	}
	return fmt.Errorf("%s: %w", key, err)
}

const usageFormat = `{{range .}}{{usage_key .}}	{{usage_type .}}	{{if usage_default .}}{{usage_default .}}{{else}}-{{end}}	{{usage_description .}}{{if usage_required .}} (required){{end}}
{{end}}`

// Usage prints every variable spec reads, its type, default and description.
func Usage(prefix string, spec any, out io.Writer) error {
	fmt.Fprintf(out, "Configuration comes from the environment. Each %s_NAME falls back to NAME when unset.\n", prefix)
	fmt.Fprintf(out, "Modes: check-config checks it without connecting anywhere, naming every problem (exit 1 if any);\n"+
		"healthcheck URL exits 0 when URL (a running instance's /readyz) answers 2xx.\n\n")
	tw := tabwriter.NewWriter(out, 1, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tTYPE\tDEFAULT\tDESCRIPTION")
	if err := envconfig.Usagef(prefix, spec, tw, usageFormat); err != nil {
		return fmt.Errorf("print usage: %w", err)
	}
	return tw.Flush()
}

// IsTerminal reports whether w is a character device, such as a developer's terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// CommonConfig returns the common settings; a service's Config gets the method by embedding
// Common, which lets shared code find them in any service's settings.
func (c *Common) CommonConfig() *Common { return c }

// Checker is a service's configuration that checks itself without the network (no database,
// no peer): every problem, each naming the variable(s) to change. A service refuses to start
// while its configuration has a problem, and its check-config mode lists them.
type Checker interface {
	Check() []error
}

// Defaults sets every field of spec (a pointer to a service's Config) that has a default tag to
// that default, read by envconfig exactly as Load reads it when the variable is unset. Tests and
// tools build a Config from it and change what they need, so a default lives only in its tag.
func Defaults(spec any) error {
	var errs []error
	err := eachSetting(spec, func(f reflect.StructField, field reflect.Value) {
		if _, ok := f.Tag.Lookup("default"); !ok {
			return
		}
		if err := defaultOf(f, field); err != nil {
			errs = append(errs, fmt.Errorf("%s: default: %w", f.Name, err))
		}
	})
	return errors.Join(append(errs, err)...)
}

// defaultOf sets dst to field f's default tag, parsed by envconfig through a one-field struct
// whose variable is never set.
func defaultOf(f reflect.StructField, dst reflect.Value) error {
	def := reflect.New(reflect.StructOf([]reflect.StructField{{
		Name: "DroverDefaultOnly", Type: f.Type, Tag: reflect.StructTag(`default:` + strconv.Quote(f.Tag.Get("default"))),
	}}))
	if err := envconfig.Process("DROVER_DEFAULT_ONLY", def.Interface()); err != nil {
		return err
	}
	dst.Set(def.Elem().Field(0))
	return nil
}
