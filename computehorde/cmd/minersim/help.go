package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"drover.dev/computehorde/minersim"
)

const defaultSpinUp = time.Second

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `minersim serves simulated ComputeHorde miners for the batch-runner to test against.

Each miner listens on its own loopback address at /v0.1/validator_interface/{validator_hotkey},
checks ValidatorAuthForMiner (signature, 10 s age, its own hotkey, the URL's validator, a known
active validator with stake >= 1000), sends its manifest, verifies the JobStarted, JobAccepted
and JobFinished receipts, reports ready after -spin-up, solves proof-of-work jobs for real and
answers V0JobFinishedRequest. Jobs it cannot run (hashcat) get V0JobFailedRequest unless a
behaviour scripts the answer.

USAGE
  minersim [flags]

FLAGS
`)
	fs.PrintDefaults()
	fmt.Fprint(w, behavioursHelp)
	fmt.Fprintf(w, "  decline kinds: %s\n", strings.Join(minersim.DeclineKinds(), ", "))
	fmt.Fprint(w, controlHelp)
}

const behavioursHelp = `
BEHAVIOURS
  -behaviour TARGET:key=value,...   TARGET is * (every miner), N (miner N), A-B (miners A..B)
  or N/class/slot (one executor slot; a miner gives each accepted job the lowest free slot of
  its class). A job uses its executor's entry, else its miner's, else *; entries replace, they
  do not merge. Keys (also the JSON fields of a -scenario file):

  decline=KIND        decline every initial request (kinds below):
                        no_reason               reason "unknown", no receipts
                        busy                    reason "busy", no receipts
                        busy_valid              busy + organic JobStarted receipts from another
                                                validator with stake >= 30000 (excuses the miner)
                        busy_wrong_type         ...receipts that are JobAccepted payloads
                        busy_not_organic        ...is_organic false
                        busy_other_miner        ...for another miner's hotkey
                        busy_same_job           ...for the declined job's own uuid
                        busy_other_class        ...for another executor class
                        busy_future             ...issued 5 s after our JobStarted
                        busy_expired            ...expired (ttl 60 s) before our JobStarted
                        busy_bad_signature      ...validator signature over other bytes
                        busy_inactive_validator ...signed by a validator without permit
                        busy_low_stake          ...signed by a validator with stake < 30000
                        busy_unknown_validator  ...signed by a key in no metagraph
                        invalid_signature, no_miner_for_job, validator_blacklisted: that reason
                      (busy receipts: one per executor of the class; timestamps 1 s before ours)
  answer=A            solve (default: solve proof-of-work, fail others), wrong (finished with
                      a wrong stdout), fail (V0JobFailedRequest, nonzero_return_code),
                      horde_failed (V0HordeFailedRequest executor_spinup_failed instead of
                      ready), scripted (finished with stdout=...)
  non_pow=fail|scripted  answer to a job that is not proof-of-work (hashcat needs a GPU)
  stdout=TEXT         stdout for answer=scripted and non_pow=scripted
  answer_delay=DUR    wait DUR (e.g. 70s) before the final answer: a late answer
  answer_at=DUR       send the final answer at one fleet-wide instant: the first V0JobRequest
                      of a round's arrival + DUR, so every such executor answers in the same
                      millisecond (each connection writes its due answers in one system call);
                      excludes answer_delay
  Stage keys take manifest | accept | ready | answer (the message due at that stage):
  silent=STAGE        send nothing from STAGE on (connection stays open and read)
  disconnect=STAGE    close the connection instead of sending STAGE's message (mid-job: answer)
  malformed=STAGE     send a truncated, non-JSON frame just before STAGE's message
  oversize=STAGE      send a frame of -oversize-bytes just before STAGE's message
  unknown_job=STAGE   send STAGE's message for a random job_uuid just before the real one
  duplicate=STAGE     send STAGE's message twice
  stop_reading=STAGE  stop reading the socket after STAGE's message (receive buffer 4 KiB), so
                      the validator's writes block
  slowloris=STAGE     dribble STAGE's frame one byte per dribble_every (default 100ms)
  dribble_every=DUR   pause between slowloris bytes

  Scenario file: {"default": {...}, "miners": {"3": {...}}, "executors": {"4/always_on.test/0": {...}}}
  with the keys above as JSON fields (durations as strings such as "1.5s").
`

const controlHelp = `
CONTROL ENDPOINTS (GET, JSON)
  /metagraph  {"netuid","block","miners":[{"uid","hotkey","coldkey","ip","port","stake","validator"}]}
              miners are uids 0..N-1, then the known validators (ip 0.0.0.0, port 0)
  /arrivals   every frame miners received: miner, miner_hotkey, validator, executor, job_uuid,
              message_type, unix_nano, bytes, decode_error[, frame]; filter with
              ?miner=N&message_type=T&job_uuid=U&since=UNIX_NANO
  /jobs       per job: response, receipt verdicts, ready, answer, stdout, answer_sent_unix_nano
              (wall clock just before the final answer frame was written)
  /stats      per miner: connections, auth_failures, frames, decode_errors, busy_executors
  /miners     index, uid, hotkey, coldkey, ip, port
  /healthz    {"status":"ok"}
`
