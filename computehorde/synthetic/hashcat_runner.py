#!/usr/bin/env python3
"""Drover's runner for the ComputeHorde hashcat v2 synthetic job.

The validator mounts this file at /script.py and runs it with one argument, the first password.
/volume/payload.txt is a pickled dict whose "payloads" are Fernet tokens, one per stage. Each
stage's token decrypts, with a key derived from the previous stage's cracked passwords (the
first password for stage 0), to lines of "hexdigest:salthex" that hashcat cracks with the
stage's mode and mask. The only output is the answer: the urlsafe base64 of sha256 over every
stage's sorted passwords, concatenated.
"""

import base64
import hashlib
import os
import pickle
import subprocess
import sys

from cryptography.fernet import Fernet

PAYLOAD_PATH = os.environ.get("PAYLOAD_PATH", "/volume/payload.txt")
HASHES_FILE = "_payload.txt"
CUSTOM_CHARSET = "?l?d?u"


def derive_key(secret: str) -> bytes:
    return base64.urlsafe_b64encode(hashlib.sha256(secret.encode("utf-8")).digest())


def crack(mode: str, mask: str, hashes: bytes) -> list[str]:
    with open(HASHES_FILE, "wb") as f:
        f.write(hashes)
    cmd = [
        "hashcat",
        "--potfile-disable",
        "--restore-disable",
        "--attack-mode", "3",
        "--workload-profile", "3",
        "--optimized-kernel-enable",
        "--hash-type", mode,
        "--hex-salt",
        "-1", CUSTOM_CHARSET,
        "--outfile-format", "2",
        "--quiet",
        HASHES_FILE,
        mask,
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return sorted(line for line in out.splitlines() if line)


def main() -> None:
    with open(PAYLOAD_PATH, "rb") as f:
        job = pickle.load(f)

    secret = sys.argv[1]
    cracked: list[list[str]] = []
    for i in range(int(job["n"])):
        hashes = Fernet(derive_key(secret)).decrypt(job["payloads"][i])
        passwords = crack(job["algorithms"][i], job["masks"][i], hashes)
        cracked.append(passwords)
        secret = "\n".join(passwords)

    everything = "".join("".join(passwords) for passwords in cracked)
    print(derive_key(everything).decode("ascii"))


if __name__ == "__main__":
    main()
