#!/usr/bin/env python3
"""Faults between LOOM backends in two real NIXL agents, each in its own process.

Run by ctest as `python fault_test.py CASE` with NIXL_PLUGIN_DIR and LOOM_PROVIDER set.

across_hosts: the agents live in two network namespaces joined by a veth pair (another host
  for real; needs root and iproute2, else the case exits 77: skipped). WRITEs and READs cross
  the link byte-exact both ways; the link goes down in the middle of large transfers both ways
  and every one still outstanding fails within LOOM_PEER_TIMEOUT_MS (neither agent died); the
  link comes back and, the metadata loaded again, transfers and notifications work.
killed_peer_both_ways: both agents have large transfers outstanding towards each other when
  one is killed; the survivor's fail within LOOM_PEER_TIMEOUT_MS and it closes cleanly.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

from loom_backend_test import DEADLINE_S, descs, make_agent, pattern, register

SIZE = 32 << 20
PIECES = 64
ROUNDS_IN_FLIGHT = 8  # 512 MiB each way: still under way when the fault comes
TIMEOUT_S = int(os.environ.get("LOOM_PEER_TIMEOUT_MS", "5000")) / 1000.0
SLACK_S = 1.0  # one 100 ms check and scheduling on a loaded 2-core machine


def say(*words):
    sys.stdout.write("LOOM %s\n" % " ".join(str(w) for w in words))
    sys.stdout.flush()


def hear(child, word):
    """The next `LOOM word ...` line of `child` (NIXL logs to stdout too), as its words."""
    while True:
        line = child.stdout.readline()
        assert line, "the %s agent ended before saying %s" % (child.args[-1], word)
        parts = line.split()
        if parts[:2] == ["LOOM", word]:
            return parts[2:]


def seed_of(name):
    return 11 if name == "A" else 29


class peer_view:
    """What an agent knows of the other: its name, buffers and metadata."""

    def __init__(self, words):
        self.name, self.inbox, self.outbox, self.md = words[0], int(words[1]), int(words[2]), bytes.fromhex(words[3])


def remote_descs(agent, base):
    each = SIZE // PIECES
    return agent.get_xfer_descs([(base + i * each, each, 0) for i in range(PIECES)], "DRAM")


def transfers_both_ways(agent, peer, outbox, back, tag):
    """A WRITE of our outbox into the peer's inbox (notifying `tag`) and a READ of the peer's
    outbox into `back`; started, not waited for."""
    w = agent.initialize_xfer("WRITE", descs(agent, outbox, PIECES)[0], remote_descs(agent, peer.inbox), peer.name,
                              tag.encode())
    r = agent.initialize_xfer("READ", descs(agent, back, PIECES)[0], remote_descs(agent, peer.outbox), peer.name)
    for h in (w, r):
        assert agent.transfer(h) in ("DONE", "PROC")
    return [w, r]


def settle(agent, handles, notifs, on_first_end=None):
    """Polls until every handle is DONE or ERR; returns (state, time) per handle.
    `on_first_end` runs once, when the first handle ends."""
    ended = [None] * len(handles)
    t0 = time.monotonic()
    while None in ended:
        for i, h in enumerate(handles):
            if ended[i] is None:
                try:
                    state = agent.check_xfer_state(h)
                except Exception:  # NIXL raises on some error codes
                    state = "ERR"
                if state in ("DONE", "ERR"):
                    ended[i] = (state, time.monotonic())
                    if on_first_end is not None:
                        on_first_end()
                        on_first_end = None
        for k, v in agent.get_new_notifs().items():
            notifs.setdefault(k, []).extend(v)
        assert time.monotonic() - t0 < 60, "transfers never ended"
    return ended


def round_trip(agent, peer, outbox, inbox, back, tag):
    """Transfers both ways, the peer's notification `tag`, and every byte checked."""
    notifs = {}
    ended = settle(agent, transfers_both_ways(agent, peer, outbox, back, tag), notifs)
    assert all(s == "DONE" for s, _ in ended), "a transfer failed: %s" % ended
    t0 = time.monotonic()
    while tag.encode() not in notifs.get(peer.name, []):
        for k, v in agent.get_new_notifs().items():
            notifs.setdefault(k, []).extend(v)
        assert time.monotonic() - t0 < DEADLINE_S, "no notification %s from %s" % (tag, peer.name)
    expected = pattern(SIZE, seed_of(peer.name))
    assert np.array_equal(inbox, expected), "the peer's WRITE left other bytes"
    assert np.array_equal(back, expected), "the READ of the peer's buffer returned other bytes"
    inbox[:] = 0
    back[:] = 0


def agent_main(name, mode):
    """One agent (a child process): buffers, metadata out and in, then the steps of `mode`."""
    agent = make_agent(name)
    outbox, inbox, back = pattern(SIZE, seed_of(name)), np.zeros(SIZE, np.uint8), np.zeros(SIZE, np.uint8)
    for buf in (outbox, inbox, back):
        register(agent, buf)
    say("MD", name, inbox.ctypes.data, outbox.ctypes.data, agent.get_agent_metadata().hex())
    peer = peer_view(sys.stdin.readline().split())
    agent.add_remote_agent(peer.md)
    round_trip(agent, peer, outbox, inbox, back, "first")
    say("CROSSED")

    handles = []
    for _ in range(ROUNDS_IN_FLIGHT):
        handles += transfers_both_ways(agent, peer, outbox, back, "lost")
    say("POSTED")
    # The fault comes once the first transfer ended: the others are under way.
    ended = settle(agent, handles, {}, lambda: say("MOVING"))
    fault = float(sys.stdin.readline().split()[1])  # when the link went down or the peer was killed
    failed = [t for s, t in ended if s == "ERR"]
    assert failed, "no transfer was outstanding when the fault came (%s, fault at %.3f)" % (ended, fault)
    assert min(failed) >= fault, "a transfer failed before the fault"
    slowest = max(failed) - fault
    say("FAILED", len(failed), len(handles), "%.0f" % (slowest * 1000))
    assert slowest <= TIMEOUT_S + SLACK_S, "transfers failed %.2f s after the fault" % slowest
    for h in handles:
        agent.release_xfer_handle(h)
    if mode == "killed":
        return 0
    agent.remove_remote_agent(peer.name)
    say("CLOSED")
    sys.stdin.readline()  # the link is back
    agent.add_remote_agent(peer.md)
    t0 = time.monotonic()
    while True:  # the peer may not have loaded our metadata yet
        try:
            round_trip(agent, peer, outbox, inbox, back, "again")
            break
        except AssertionError:
            if time.monotonic() - t0 > DEADLINE_S:
                raise
    say("DONE")
    sys.stdin.readline()  # until the peer is done with us
    return 0


def start(name, mode, prefix=()):
    env = dict(os.environ)
    return subprocess.Popen(list(prefix) + [sys.executable, __file__, "agent", mode, name], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


def tell(child, line):
    child.stdin.write(line + "\n")
    child.stdin.flush()


def introduce(a, b):
    md_a, md_b = hear(a, "MD"), hear(b, "MD")
    tell(a, " ".join(md_b))
    tell(b, " ".join(md_a))
    hear(a, "CROSSED")
    hear(b, "CROSSED")
    hear(a, "POSTED")
    hear(b, "POSTED")
    hear(a, "MOVING")
    hear(b, "MOVING")


def ip(*args):
    subprocess.run(["ip"] + list(args), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for_retransmissions(namespaces, limit_s=30.0):
    """Until no TCP connection in `namespaces` is backing off its retransmissions (ss shows
    "backoff:"), or `limit_s`. A connection that kept sending while the link was down retries
    at doubling intervals: after a 2 s loss its next try can come 1.6 s after the link is back,
    and what waits behind it — pings included — with it. The case is about what works once the
    link is back; the time TCP takes to notice is the kernel's, and longer than the 1.5 s peer
    timeout the case runs with."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        out = "".join(subprocess.run(["ip", "netns", "exec", n, "ss", "-tin"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True).stdout for n in namespaces)
        if "backoff:" not in out:
            return time.monotonic() - t0
        time.sleep(0.05)
    return time.monotonic() - t0


def case_across_hosts():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("SKIPPED: network namespaces need root and iproute2")
        return 77
    tag = "%d" % os.getpid()
    ns = ["loom-nixl-%s-a" % tag, "loom-nixl-%s-b" % tag]
    addrs = ["10.201.0.1", "10.201.0.2"]
    # As tests/support/netns.hpp: where no namespace can be made the case skips (root without
    # CAP_SYS_ADMIN and CAP_NET_ADMIN: an unprivileged container, or a podman build's RUN step).
    made = subprocess.run(["ip", "netns", "add", ns[0]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if made.returncode != 0:
        subprocess.run(["ip", "netns", "del", ns[0]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print("SKIPPED: cannot make a network namespace here:", made.stderr.strip())
        return 77
    children = []
    try:
        ip("netns", "add", ns[1])
        ip("link", "add", "lxa" + tag, "type", "veth", "peer", "name", "lxb" + tag)
        for i, veth in enumerate(["lxa" + tag, "lxb" + tag]):
            ip("link", "set", veth, "netns", ns[i])
            ip("-n", ns[i], "link", "set", veth, "name", "loom0")
            ip("-n", ns[i], "addr", "add", addrs[i] + "/24", "dev", "loom0")
            ip("-n", ns[i], "link", "set", "loom0", "up")
            ip("-n", ns[i], "link", "set", "lo", "up")
        os.environ["LOOM_IFACE"] = "loom0"
        a = start("A", "link", ["ip", "netns", "exec", ns[0]])
        b = start("B", "link", ["ip", "netns", "exec", ns[1]])
        children = [a, b]
        introduce(a, b)
        down = time.monotonic()  # before the command: transfers may fail the moment the link goes
        ip("-n", ns[0], "link", "set", "loom0", "down")
        for c in children:
            tell(c, "DOWN %f" % down)
        for c in children:
            print(c.args[-1], "failed/started/ms after the loss:", hear(c, "FAILED"))
            hear(c, "CLOSED")
        ip("-n", ns[0], "link", "set", "loom0", "up")
        print("TCP retransmissions settled %.2f s after the link came back" % wait_for_retransmissions(ns))
        for c in children:
            tell(c, "UP")
        for c in children:
            hear(c, "DONE")
        for c in children:
            tell(c, "BYE")
            assert c.wait(timeout=DEADLINE_S) == 0, "agent %s failed" % c.args[-1]
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait()
        for n in ns:
            subprocess.run(["ip", "netns", "del", n], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return 0


def case_killed_peer_both_ways():
    a, b = start("A", "killed"), start("B", "killed")
    try:
        introduce(a, b)
        killed = time.monotonic()  # before the signal: the survivor may see the death at once
        b.send_signal(signal.SIGKILL)
        b.wait()
        tell(a, "KILLED %f" % killed)
        print("A failed/started/ms after the kill:", hear(a, "FAILED"))
        assert a.wait(timeout=DEADLINE_S) == 0, "the survivor failed"
    finally:
        for c in (a, b):
            if c.poll() is None:
                c.kill()
                c.wait()
    return 0


def main():
    if sys.argv[1] == "agent":
        return agent_main(sys.argv[3], sys.argv[2])
    rc = globals()["case_" + sys.argv[1]]()
    if rc == 0:
        print("ok:", sys.argv[1])
    return rc


if __name__ == "__main__":
    sys.exit(main())
