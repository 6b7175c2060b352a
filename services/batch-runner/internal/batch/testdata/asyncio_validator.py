"""ComputeHorde's method of sending a batch's job requests, for the hot-phase benchmark.

Written as the synthetic-jobs flow describes it: one asyncio task per executor, each task
waiting on a barrier inside itself and then sending its already serialised V0JobRequest with
the websockets client, recording the instants just before and just after the send. The
connections follow the floor's layout: one per miner, authenticated first, every executor of a
miner sending on its miner's connection.

Reads from stdin: {"miners": [{"url": ..., "auth": "<ValidatorAuthForMiner JSON>",
"jobs": ["<V0JobRequest JSON>", ...]}, ...]}. Writes to stdout: {"before": [unix ns, ...],
"after": [unix ns, ...]}, one pair per job.
"""

import asyncio
import json
import random
import sys
import time

import websockets


async def drain(ws):
    """Read and drop what the miner sends (the manifest, answers) so its writes never block."""
    try:
        async for _ in ws:
            pass
    except websockets.ConnectionClosed:
        pass


async def connect(miner):
    ws = await websockets.connect(miner["url"], max_size=None, ping_interval=None, compression=None)
    await ws.send(miner["auth"])
    return ws


async def send_job(ws, payload, barrier, out):
    # The seed: serialise the V0JobRequest, then the barrier, then send the serialised frame.
    await barrier.wait()
    before = time.time_ns()
    await ws.send(payload)
    out.append((before, time.time_ns()))


async def main():
    spec = json.load(sys.stdin)
    conns = await asyncio.gather(*(connect(m) for m in spec["miners"]))
    drains = [asyncio.create_task(drain(ws)) for ws in conns]
    await asyncio.sleep(0.2)  # auth checked, manifest sent
    executors = [(ws, job) for ws, m in zip(conns, spec["miners"]) for job in m["jobs"]]
    random.shuffle(executors)
    barrier = asyncio.Barrier(len(executors))
    out = []
    await asyncio.gather(*(asyncio.create_task(send_job(ws, job, barrier, out)) for ws, job in executors))
    await asyncio.sleep(0.5)  # let the last frames leave before closing
    await asyncio.gather(*(ws.close() for ws in conns))
    for d in drains:
        d.cancel()
    json.dump({"before": [b for b, _ in out], "after": [a for _, a in out]}, sys.stdout)


asyncio.run(main())
