package synthetic

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hashcatPayloadPy loads payload.txt as the runner does and prints its keys in order with the
// Python type of each value; with cryptography present it also decrypts stage 0 as upstream's
// runner would, from the first password.
const hashcatPayloadPy = `
import base64, hashlib, json, os, pickle, sys
job = pickle.loads(sys.stdin.buffer.read())
out = {"keys": list(job), "types": {k: [type(v).__name__] + sorted({type(x).__name__ for x in v})
       if isinstance(v, list) else [type(v).__name__] for k, v in job.items()}}
out.update({k: v for k, v in job.items() if k != "payloads"})
try:
    from cryptography.fernet import Fernet
except ImportError:
    pass
else:
    key = base64.urlsafe_b64encode(hashlib.sha256(os.environ["FIRST_PASSWORD"].encode()).digest())
    out["stage0"] = Fernet(key).decrypt(job["payloads"][0]).decode()
print(json.dumps(out))
`

func TestHashcatPayloadPython(t *testing.T) {
	t.Parallel()

	lookPython(t)
	b := setupHashcat(t, 4)
	payload := payloadFile(t, b.job.Initial.Volume)
	out := runPython(t, hashcatPayloadPy, payload, "FIRST_PASSWORD="+b.job.Request.DockerRunCmd[1])

	want := `{"keys": ["n", "payloads", "masks", "algorithms", "num_letters", "num_digits"],
		"types": {"n": ["int"], "payloads": ["list", "str"], "masks": ["list", "str"],
			"algorithms": ["list", "str"], "num_letters": ["list", "int"], "num_digits": ["list", "int"]},
		"n": 3, "masks": ["?1?1?1?1?1?1", "?1?1?1?1?1?d", "?1?1?1?1?1?d"],
		"algorithms": ["1410", "10810", "1710"], "num_letters": [6, 5, 5], "num_digits": [0, 1, 1]`
	if pythonHasCryptography(t) {
		want += fmt.Sprintf(`, "stage0": %q`, b.secrets.stagePayload(0))
	} else {
		t.Log("cryptography not installed: stage 0 decryption checked in Go only")
	}
	require.JSONEq(t, want+"}", out)
}

// fakeHashcat stands in for hashcat on PATH: it checks the arguments the runner passes and
// cracks the hash file from the word list in FAKE_HASHCAT_WORDS, keeping only the words the
// mask admits, so a wrong mode, salt or mask leaves hashes uncracked.
const fakeHashcat = `
import hashlib, os, re, sys
args = sys.argv[1:]
opt = lambda name: args[args.index(name) + 1]
assert opt("--attack-mode") == "3" and opt("-1") == "?l?d?u" and opt("--outfile-format") == "2"
assert "--hex-salt" in args and "--quiet" in args and "--potfile-disable" in args
hash_file, mask = args[-2], args[-1]
algo = {"1410": hashlib.sha256, "10810": hashlib.sha384, "1710": hashlib.sha512}[opt("--hash-type")]
shape = "".join({"?1": "[a-z0-9A-Z]", "?d": "[0-9]"}[mask[i:i + 2]] for i in range(0, len(mask), 2))
words = [w for w in os.environ["FAKE_HASHCAT_WORDS"].split() if re.fullmatch(shape, w)]
for line in open(hash_file).read().splitlines():
    digest, salt = line.split(":")
    print(next(w for w in words if algo(w.encode() + bytes.fromhex(salt)).hexdigest() == digest))
`

// TestHashcatRunnerPython runs the embedded runner script as an executor would, with a fake
// hashcat, and requires it to print exactly the job's answer.
func TestHashcatRunnerPython(t *testing.T) {
	t.Parallel()

	python := lookPython(t)
	if !pythonHasCryptography(t) {
		t.Skip("cryptography not installed; the runner needs it as the job image provides it")
	}
	b := setupHashcat(t, 5)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "hashcat"), []byte("#!"+python+"\n"+fakeHashcat), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "script.py"), []byte(b.job.Request.RawScript), 0o644))
	payloadPath := filepath.Join(dir, "payload.txt")
	require.NoError(t, os.WriteFile(payloadPath, payloadFile(t, b.job.Initial.Volume), 0o644))

	// Every stage's passwords plus a few decoys that crack nothing.
	words := slices.Concat(b.secrets.passwords[:]...)
	words = append(words, "abcdef", "abcde1", "zzzzz9")
	out := runPythonIn(t, dir, []string{"script.py", b.job.Request.DockerRunCmd[1]}, nil,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PAYLOAD_PATH="+payloadPath,
		"FAKE_HASHCAT_WORDS="+strings.Join(words, " "))
	require.Equal(t, b.job.Answer+"\n", out)
	require.True(t, b.job.Verify(out))
}
