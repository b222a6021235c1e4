#!/usr/bin/env python3
"""Soak of the LOOM backend in two real NIXL agents, each in its own process.

Run by ctest as `python soak_test.py` with NIXL_PLUGIN_DIR and LOOM_PROVIDER set. Agent A, in
this process, cycles: load B's metadata (connect), WRITE with a notification, wait, release the
handle, remove B (close). Both processes' open descriptors and resident memory are sampled every
tenth of the run and must stay flat from cycle 1 (at most 4 descriptors, 8 MiB). B counts the
notifications: one per cycle. LOOM_SOAK_CYCLES sets the length (default 200; the `slow` test
runs 10,000).
"""
import os
import select
import subprocess
import sys
import time

import numpy as np

from loom_backend_test import DEADLINE_S, descs, make_agent, pattern, register

SIZE = 65536 + 3
DESCRIPTOR_SLACK = 4
RESIDENT_SLACK_KIB = 8 * 1024


def usage():
    fds = len(os.listdir("/proc/self/fd")) - 1  # the listing's own
    with open("/proc/self/statm") as f:
        resident = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    return fds, resident


def target():
    """B: a registered buffer, its metadata out; counts notifications; answers USAGE."""
    b = make_agent("B")
    dst = np.zeros(SIZE, np.uint8)
    register(b, dst)
    sys.stdout.write("LOOM MD %d %s\n" % (dst.ctypes.data, b.get_agent_metadata().hex()))
    sys.stdout.flush()
    seen = 0
    while True:
        for v in b.get_new_notifs().values():
            seen += len(v)
        if not select.select([sys.stdin], [], [], 0)[0]:
            continue
        line = sys.stdin.readline()
        if not line:
            return 0
        fds, resident = usage()
        sys.stdout.write("LOOM USAGE %d %d %d\n" % (fds, resident, seen))
        sys.stdout.flush()


def ask(child):
    child.stdin.write("USAGE\n")
    child.stdin.flush()
    while True:
        line = child.stdout.readline()
        assert line, "B ended"
        if line.startswith("LOOM USAGE "):
            return [int(x) for x in line.split()[2:]]


def flat(samples, who):
    (fds1, res1), (fds2, res2) = samples[1][1:3], samples[-1][1:3]
    assert fds2 - fds1 <= DESCRIPTOR_SLACK, "%s: %d more descriptors" % (who, fds2 - fds1)
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return  # AddressSanitizer's quarantine keeps freed memory resident: growth says nothing
    assert res2 - res1 <= RESIDENT_SLACK_KIB, "%s: resident memory grew by %d KiB" % (who, res2 - res1)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "target":
        return target()
    cycles = int(os.environ.get("LOOM_SOAK_CYCLES", "200"))
    every = max(1, cycles // 10)
    child = subprocess.Popen([sys.executable, __file__, "target"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        line = ""
        while not line.startswith("LOOM MD "):
            line = child.stdout.readline()
            assert line, "B ended before giving its metadata"
        _, _, addr, md = line.split()
        addr, md = int(addr), bytes.fromhex(md)
        a = make_agent("A")
        src = pattern(SIZE, 5)
        register(a, src)
        mine, theirs = [], []

        def take(c):
            fds, resident = usage()
            b_fds, b_resident, seen = ask(child)
            mine.append((c, fds, resident))
            theirs.append((c, b_fds, b_resident))
            print("soak cycle %6d  A: descriptors %4d resident %8d KiB  B: descriptors %4d resident %8d KiB"
                  % (c, fds, resident, b_fds, b_resident), flush=True)
            return seen

        for c in range(cycles):
            if c <= 1:
                take(c)
            a.add_remote_agent(md)
            remote = a.get_xfer_descs([(addr, SIZE, 0)], "DRAM")
            h = a.initialize_xfer("WRITE", descs(a, src, 1)[0], remote, "B", b"c%d" % c)
            state = a.transfer(h)
            t0 = time.monotonic()
            while state != "DONE":
                assert state != "ERR", "cycle %d failed" % c
                assert time.monotonic() - t0 < DEADLINE_S, "cycle %d never ended" % c
                state = a.check_xfer_state(h)
            a.release_xfer_handle(h)
            a.remove_remote_agent("B")
            if (c + 1) % every == 0:
                seen = take(c + 1)
        t0 = time.monotonic()
        while seen < cycles and time.monotonic() - t0 < DEADLINE_S:
            seen = ask(child)[2]
        assert seen == cycles, "B saw %d notifications of %d" % (seen, cycles)
        flat(mine, "A")
        flat(theirs, "B")
        child.stdin.close()
        assert child.wait(timeout=DEADLINE_S) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    print("ok: soak,", cycles, "cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
