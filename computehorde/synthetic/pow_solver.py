# drover-synthetic-pow v1
"""Drover's proof-of-work synthetic job.

POW_DIGEST is the SHA-256 of the POW_SALT bytes followed by a secret x, 8 bytes big-endian, with
0 <= x < POW_RANGE. The job prints x, found by trying every candidate.
"""

import hashlib
import os
import sys


def main() -> None:
    salt = bytes.fromhex(os.environ["POW_SALT"])
    digest = bytes.fromhex(os.environ["POW_DIGEST"])
    for x in range(int(os.environ["POW_RANGE"])):
        if hashlib.sha256(salt + x.to_bytes(8, "big")).digest() == digest:
            print(x)
            return
    sys.exit("no secret matches the digest")


if __name__ == "__main__":
    main()
