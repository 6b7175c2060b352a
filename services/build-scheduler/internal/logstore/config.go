package logstore

import (
	"errors"
	"fmt"
	"net/url"

	"drover.dev/shared/postgres"
)

// Config selects the log store. The scheduler (which reads logs) and every build-worker (which
// writes them) embed it in their configuration and must be given the same store: as with
// DATABASE_URL, each variable falls back to its unprefixed name, so LOG_STORE and LOG_S3_* can be
// set once for a whole deployment.
type Config struct {
	LogStore       string `envconfig:"LOG_STORE" default:"postgres" desc:"where build output is kept: postgres (the job_logs table) or s3; the scheduler and its build-workers must agree"`
	LogS3Endpoint  string `envconfig:"LOG_S3_ENDPOINT" desc:"URL of an S3-compatible service, e.g. http://minio:9000; empty for AWS S3 in LOG_S3_REGION"`
	LogS3Region    string `envconfig:"LOG_S3_REGION" default:"us-east-1" desc:"region requests are signed for"`
	LogS3Bucket    string `envconfig:"LOG_S3_BUCKET" desc:"bucket for logs, which must exist (required with LOG_STORE=s3)"`
	LogS3Prefix    string `envconfig:"LOG_S3_PREFIX" desc:"key prefix; a job's chunks are objects under <prefix>/jobs/<job id>/"`
	LogS3AccessKey string `envconfig:"LOG_S3_ACCESS_KEY" desc:"access key id (required with LOG_STORE=s3)"`
	LogS3SecretKey string `envconfig:"LOG_S3_SECRET_KEY" secret:"true" desc:"secret access key (required with LOG_STORE=s3)"`
	LogS3PathStyle bool   `envconfig:"LOG_S3_PATH_STYLE" default:"false" desc:"put the bucket in the URL path (endpoint/bucket/key) rather than the host name, as MinIO and most self-hosted services need"`
}

// errS3Incomplete is returned by Open for an S3 store whose bucket or keys are missing.
var errS3Incomplete = errors.New("LOG_STORE=s3 needs LOG_S3_BUCKET, LOG_S3_ACCESS_KEY and LOG_S3_SECRET_KEY")

// Open returns the store cfg selects; the Postgres store keeps chunks through db.
func Open(cfg Config, db postgres.DBTX) (Store, error) {
	switch cfg.LogStore {
	case "postgres":
		return Postgres{DB: db}, nil
	case "s3":
		if cfg.LogS3Bucket == "" || cfg.LogS3AccessKey == "" || cfg.LogS3SecretKey == "" {
			return nil, errS3Incomplete
		}
		return NewS3(cfg), nil
	default:
		return nil, fmt.Errorf("LOG_STORE %q: want postgres or s3", cfg.LogStore)
	}
}

// Check reports what Open would refuse, and an LOG_S3_ENDPOINT that is not a URL, without
// opening anything (the configuration check of the scheduler and the build-worker).
func Check(cfg Config) error {
	if _, err := Open(cfg, nil); err != nil {
		return err
	}
	if cfg.LogStore == "s3" && cfg.LogS3Endpoint != "" {
		if u, err := url.Parse(cfg.LogS3Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("LOG_S3_ENDPOINT %q: want http(s)://host[:port]", cfg.LogS3Endpoint)
		}
	}
	return nil
}
