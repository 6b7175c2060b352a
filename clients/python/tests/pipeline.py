"""The test pipeline: two computed tables over populate-worker's example_signal, made in Python.

Which keys fail is set by the tests (BROKEN), so a test can make a key fail, read the error the
worker recorded, repair it and reschedule it.
"""

import threading
import time

import drover

pipeline = drover.Pipeline()

# signal_ids whose makes raise; tests add and remove them.
BROKEN: set[int] = set()
# Seconds py_signal_slow's make takes.
SLOW_SECONDS = 0.05

_lock = threading.Lock()
calls: dict[str, int] = {"py_signal_square": 0, "py_signal_slow": 0}


def _count(table: str) -> None:
    with _lock:
        calls[table] += 1


# Both tables have a row per example_signal row.
PER_SIGNAL = {"primary_key": ["signal_id"], "key_source": "SELECT signal_id FROM example_signal", "upstream": ["example_signal"]}


@pipeline.computed(target="py_signal_square", **PER_SIGNAL)
def square(key):
    _count("py_signal_square")
    signal_id = key["signal_id"]
    if signal_id in BROKEN:
        raise ValueError(f"signal {signal_id} is broken")
    return {"square": signal_id * signal_id, "label": f"s{signal_id}"}


@pipeline.computed(target="py_signal_slow", **PER_SIGNAL)
def slow(key):
    _count("py_signal_slow")
    time.sleep(SLOW_SECONDS)
    if key["signal_id"] in BROKEN:
        raise ValueError(f"signal {key['signal_id']} is broken")
    return [{"half": key["signal_id"] / 2}]
