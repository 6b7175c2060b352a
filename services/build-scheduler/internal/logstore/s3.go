package logstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"
)

// seqDigits is the width of the zero-padded sequence number that starts a chunk's object name:
// every non-negative int64 fits, so names sort as their numbers do.
const seqDigits = 19

// getConcurrency bounds the GETs one Read has in flight: a page of 500 chunks would otherwise
// cost 500 round trips one after the other.
const getConcurrency = 16

// streams are the stream names a chunk may have; the name is part of the object key, so nothing
// else may get in.
var streams = map[string]bool{"stdout": true, "stderr": true, "system": true}

// S3 stores each appended chunk as its own object in an S3-compatible bucket, named
//
//	<prefix>jobs/<job id>/<seq, 19 digits>-<attempt>-<stream>
//
// so that listing a job's folder after a sequence number (ListObjectsV2 StartAfter) returns its
// newer chunks in order, which is what a followed log polls for. The sequence number is the
// time of the append in microseconds by the writer's clock, raised where needed so that the
// numbers a store hands out only grow. Time, not the attempt, leads the name because attempts
// restart at 1 when a group is retried, and a run after a retry must sort after the runs before
// it. One attempt's chunks come from one writer and are appended one after another, so they are
// in order. A later attempt, on whichever worker runs it, starts only once the earlier one has
// ended: its worker reported it, killed it (at shutdown, or on losing its liveness, before the
// new attempt's River job commits) or died, so its chunks sort after the earlier ones as long as
// the workers' clocks agree to within the time from one to the next: seconds after a worker
// dies, but possibly milliseconds after a shutdown, where clocks NTP keeps within a few
// milliseconds may order the two attempts' last and first chunks wrongly.
//
// Use NewS3 to make one; its methods are safe for concurrent use.
type S3 struct {
	client *s3.Client
	bucket string
	prefix string
	last   atomic.Int64 // the last sequence number handed out
}

// NewS3 returns a store on cfg's bucket. It makes no request: a bucket that is missing or out
// of reach shows up as Append errors (logs marked incomplete), never as a service that will not
// start.
func NewS3(cfg Config) *S3 {
	opts := s3.Options{
		Region:       cfg.LogS3Region,
		UsePathStyle: cfg.LogS3PathStyle,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: cfg.LogS3AccessKey, SecretAccessKey: cfg.LogS3SecretKey, Source: "LOG_S3_ACCESS_KEY"}, nil
		}),
		// Since service/s3 v1.73 the SDK adds CRC checksums to every upload and asks for them on
		// every download, which several S3-compatible services reject; these are the older
		// defaults, and S3 itself accepts them too.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// A worker gives each chunk a few seconds, and the build waits while it does: three
		// tries a second apart at most fit that budget, where the default backoff (up to 20s)
		// would spend it all on one failing chunk.
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = time.Second }),
	}
	if cfg.LogS3Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.LogS3Endpoint)
	}
	prefix := cfg.LogS3Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &S3{client: s3.New(opts), bucket: cfg.LogS3Bucket, prefix: prefix}
}

// Append puts one chunk as a new object.
func (s *S3) Append(ctx context.Context, jobID int64, attempt int, stream string, data []byte) error {
	if !streams[stream] || attempt < 0 {
		return fmt.Errorf("append log of job %d: bad stream %q or attempt %d", jobID, stream, attempt)
	}
	key := fmt.Sprintf("%s%0*d-%d-%s", s.jobDir(jobID), seqDigits, s.next(), attempt, stream)
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))), ContentType: aws.String("application/octet-stream"),
	})
	if err != nil {
		return fmt.Errorf("append log of job %d to s3://%s/%s: %w", jobID, s.bucket, key, err)
	}
	return nil
}

// Read lists the job's chunks after sequence number after, then fetches them concurrently.
func (s *S3) Read(ctx context.Context, jobID, after int64, limit int) ([]Chunk, error) {
	chunks, err := s.list(ctx, jobID, after, limit)
	if err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(getConcurrency)
	for i := range chunks {
		g.Go(func() error {
			data, err := s.get(gctx, jobID, chunks[i].Seq, chunks[i].key)
			chunks[i].Data = data
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([]Chunk, len(chunks))
	for i, c := range chunks {
		out[i] = c.Chunk
	}
	return out, nil
}

// listedChunk is a chunk known by its key, before its data is fetched.
type listedChunk struct {
	Chunk
	key string
}

// list returns up to limit of the job's chunks after sequence number after, without their data.
// A key that is not a chunk's name (something else put under the job's folder) is skipped.
func (s *S3) list(ctx context.Context, jobID, after int64, limit int) ([]listedChunk, error) {
	dir := s.jobDir(jobID)
	// Every name of chunk after sorts after "<after>-~": '~' sorts after the digits that follow
	// the dash in a name with the same number.
	in := &s3.ListObjectsV2Input{
		Bucket: &s.bucket, Prefix: &dir,
		StartAfter: aws.String(fmt.Sprintf("%s%0*d-~", dir, seqDigits, max(after, 0))),
	}
	var out []listedChunk
	for len(out) < limit {
		in.MaxKeys = aws.Int32(int32(min(limit-len(out), 1000)))
		page, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list log of job %d in s3://%s/%s: %w", jobID, s.bucket, dir, err)
		}
		for _, o := range page.Contents {
			if c, ok := parseChunkKey(aws.ToString(o.Key), dir); ok {
				out = append(out, c)
			}
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			break
		}
		in.ContinuationToken = page.NextContinuationToken
	}
	return out, nil
}

// parseChunkKey reads a chunk's sequence number, attempt and stream from its object key.
func parseChunkKey(key, dir string) (listedChunk, bool) {
	parts := strings.SplitN(strings.TrimPrefix(key, dir), "-", 3)
	if len(parts) != 3 || len(parts[0]) != seqDigits || !streams[parts[2]] {
		return listedChunk{}, false
	}
	seq, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return listedChunk{}, false
	}
	attempt, err := strconv.Atoi(parts[1])
	if err != nil {
		return listedChunk{}, false
	}
	c := Chunk{Seq: seq, Attempt: attempt, Stream: parts[2], CreatedAt: time.UnixMicro(seq).UTC()}
	return listedChunk{Chunk: c, key: key}, true
}

// get returns the data of the chunk stored under key.
func (s *S3) get(ctx context.Context, jobID, seq int64, key string) ([]byte, error) {
	obj, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return nil, fmt.Errorf("read log chunk %d of job %d: %w", seq, jobID, err)
	}
	defer obj.Body.Close()
	data, err := io.ReadAll(obj.Body)
	if err != nil {
		return nil, fmt.Errorf("read log chunk %d of job %d: %w", seq, jobID, err)
	}
	return data, nil
}

// jobDir is the folder holding a job's chunks. The trailing slash keeps job 4's listing from
// also returning job 42's chunks.
func (s *S3) jobDir(jobID int64) string {
	return s.prefix + "jobs/" + strconv.FormatInt(jobID, 10) + "/"
}

// next returns the sequence number of a chunk appended now: the time in microseconds, or one
// more than the last number handed out if the clock has not moved on (or stepped back).
func (s *S3) next() int64 {
	for {
		last := s.last.Load()
		n := max(time.Now().UnixMicro(), last+1)
		if s.last.CompareAndSwap(last, n) {
			return n
		}
	}
}
