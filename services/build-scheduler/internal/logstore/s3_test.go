package logstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"drover.dev/services/build-scheduler/internal/fakes3"
	"drover.dev/services/build-scheduler/internal/logstore"
	"drover.dev/shared/config"
)

// rawClient is a plain S3 client on srv, to look at the bucket the way an operator would.
func rawClient(srv fakes3.Server) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.URL), Region: srv.Region, UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}, nil
		}),
	})
}

func TestS3StoresOneObjectPerChunkUnderTheDocumentedNames(t *testing.T) {
	t.Parallel()
	srv := fakes3.Start(t)
	store := newS3(t, srv, "drover/logs") // no trailing slash: the store adds it
	ctx := context.Background()
	require.NoError(t, store.Append(ctx, 7, 2, "stderr", []byte("oops\n")))
	require.NoError(t, store.Append(ctx, 7, 2, "stdout", []byte("done\n")))

	list, err := rawClient(srv).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &srv.Bucket})
	require.NoError(t, err)
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	require.Len(t, keys, 2)
	for i, stream := range []string{"stderr", "stdout"} {
		dir, name, _ := strings.Cut(keys[i], "/jobs/7/")
		require.Equal(t, "drover/logs", dir)
		require.Regexp(t, `^\d{19}-2-`+stream+`$`, name)
	}
}

func TestS3ReadSkipsObjectsThatAreNotChunks(t *testing.T) {
	t.Parallel()
	srv := fakes3.Start(t)
	store := newS3(t, srv, "")
	ctx := context.Background()
	require.NoError(t, store.Append(ctx, 9, 1, "stdout", []byte("real\n")))
	for _, key := range []string{"jobs/9/README", "jobs/9/9999999999999999999-1-core", "jobs/9/x/0000000000000000001-1-stdout"} {
		_, err := rawClient(srv).PutObject(ctx, &s3.PutObjectInput{Bucket: &srv.Bucket, Key: aws.String(key), Body: strings.NewReader("stray")})
		require.NoError(t, err)
	}
	got, err := store.Read(ctx, 9, 0, 100)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "real\n", string(got[0].Data))
}

func TestS3RejectsWhatCannotBeAKey(t *testing.T) {
	t.Parallel()
	store := newS3(t, fakes3.Start(t), "")
	require.ErrorContains(t, store.Append(context.Background(), 1, 1, "../other", []byte("x")), "bad stream")
	require.ErrorContains(t, store.Append(context.Background(), 1, -1, "stdout", []byte("x")), "bad stream")
}

func TestS3FailsWithWrongCredentials(t *testing.T) {
	t.Parallel()
	srv := fakes3.Start(t)
	good := newS3(t, srv, "")
	require.NoError(t, good.Append(context.Background(), 3, 1, "stdout", []byte("kept\n")))

	srv.SecretKey = "not-the-secret"
	bad := newS3(t, srv, "")
	err := bad.Append(context.Background(), 3, 1, "stdout", []byte("lost\n"))
	require.ErrorContains(t, err, "SignatureDoesNotMatch")
	_, err = bad.Read(context.Background(), 3, 0, 100)
	require.ErrorContains(t, err, "SignatureDoesNotMatch")
}

func TestS3FailsWhenTheServiceIsUnreachable(t *testing.T) {
	t.Parallel()
	store := newS3(t, fakes3.Unreachable(t), "")
	// A worker gives each chunk 5 seconds; the store must give up (retries and all) within that.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.ErrorContains(t, store.Append(ctx, 1, 1, "stdout", []byte("x")), "exceeded maximum number of attempts")
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := store.Read(ctx, 1, 0, 100)
	require.ErrorContains(t, err, "exceeded maximum number of attempts")
}

func TestOpenChoosesTheConfiguredStore(t *testing.T) {
	t.Parallel()
	s3cfg := logstore.Config{LogStore: "s3", LogS3Bucket: "b", LogS3AccessKey: "k", LogS3SecretKey: "s"}
	var defaults logstore.Config
	require.NoError(t, config.Defaults(&defaults))
	tests := map[string]struct {
		cfg  logstore.Config
		want any
		err  string
	}{
		"Default":       {cfg: defaults, want: logstore.Postgres{}},
		"Empty":         {cfg: logstore.Config{}, err: `LOG_STORE "": want postgres or s3`},
		"Postgres":      {cfg: logstore.Config{LogStore: "postgres"}, want: logstore.Postgres{}},
		"S3":            {cfg: s3cfg, want: &logstore.S3{}},
		"S3NoBucket":    {cfg: logstore.Config{LogStore: "s3", LogS3AccessKey: "k", LogS3SecretKey: "s"}, err: "needs LOG_S3_BUCKET"},
		"S3NoSecretKey": {cfg: logstore.Config{LogStore: "s3", LogS3Bucket: "b", LogS3AccessKey: "k"}, err: "needs LOG_S3_BUCKET"},
		"Unknown":       {cfg: logstore.Config{LogStore: "gcs"}, err: `LOG_STORE "gcs"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store, err := logstore.Open(tt.cfg, nil)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.IsType(t, tt.want, store)
		})
	}
}

// Postgres numbers chunks with an identity column; the S3 store's numbers come from the clock.
func TestS3KeepsEveryChunkOfConcurrentWriters(t *testing.T) {
	t.Parallel()
	b := setupS3(t)
	job := b.newJob()
	// Appends at once in one worker process (at worst to one job, attempt and stream, as by an
	// attempt that lost its worker's liveness beside its successor): no chunk may take another's place.
	const writers, each = 6, 15
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := b.store.Append(context.Background(), job, 1, "stdout", fmt.Appendf(nil, "%d/%d", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := b.store.Read(context.Background(), job, 0, 500)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, c := range got {
		seen[string(c.Data)] = true
	}
	require.Len(t, seen, writers*each)
}
