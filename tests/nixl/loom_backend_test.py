#!/usr/bin/env python3
"""The LOOM backend inside the real NIXL agent (NIXL's Python API, CPU-only wheel).

Run by ctest as `python loom_backend_test.py CASE` with NIXL_PLUGIN_DIR holding
libplugin_LOOM.so and LOOM_PROVIDER naming the provider. Each case raises on failure.
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np
from nixl_cu13 import nixl_agent, nixl_agent_config

DEADLINE_S = 30


def make_agent(name, **params):
    agent = nixl_agent(name, nixl_agent_config(enable_prog_thread=False, backends=[]))
    agent.create_backend("LOOM", {k: str(v) for k, v in params.items()})
    return agent


def pattern(n, seed):
    return ((np.arange(n, dtype=np.uint64) * 131 + seed) & 0xFF).astype(np.uint8)


def register(agent, buf):
    return agent.register_memory([(buf.ctypes.data, buf.nbytes, 0, "")], "DRAM")


def descs(agent, buf, count):
    """`count` equal descriptors covering the first count * (nbytes // count) bytes."""
    each = buf.nbytes // count
    return agent.get_xfer_descs([(buf.ctypes.data + i * each, each, 0) for i in range(count)], "DRAM"), each * count


def pair():
    a, b = make_agent("A"), make_agent("B")
    a.add_remote_agent(b.get_agent_metadata())
    b.add_remote_agent(a.get_agent_metadata())
    return a, b


def refresh(a, b):
    """Metadata again after new registrations (NIXL carries them in the agent metadata)."""
    a.add_remote_agent(b.get_agent_metadata())
    b.add_remote_agent(a.get_agent_metadata())


def finish(agent, handle, others=(), notifs=None):
    """Checks `handle` until DONE, polling the other agents (one thread, no progress thread)."""
    t0 = time.time()
    while time.time() - t0 < DEADLINE_S:
        state = agent.check_xfer_state(handle)
        for o in others:
            got = o.get_new_notifs()
            if notifs is not None:
                for k, v in got.items():
                    notifs.setdefault(k, []).extend(v)
        if state == "DONE":
            return
        if state == "ERR":
            raise AssertionError("transfer failed")
    raise AssertionError("transfer did not finish in %d s" % DEADLINE_S)


def wait_notifs(agent, count, others=()):
    got = {}
    t0 = time.time()
    while sum(len(v) for v in got.values()) < count and time.time() - t0 < DEADLINE_S:
        for k, v in agent.get_new_notifs().items():
            got.setdefault(k, []).extend(v)
        for o in others:
            o.get_new_notifs()
    return got


def expect_raises(fn, what):
    try:
        fn()
    except Exception:  # NIXL raises its own error types per status code
        return
    raise AssertionError("accepted: " + what)


# ------------------------------------------------------------------------------ cases
def case_loads():
    a = make_agent("A")
    assert "LOOM" in a.get_plugin_list(), a.get_plugin_list()
    params = a.get_plugin_params("LOOM")
    assert set(params) == {"device", "rails", "progress_thread", "progress_delay_us"}, params
    mems = [str(m) for m in a.get_plugin_mem_types("LOOM")]
    assert any("DRAM" in m for m in mems) and any("VRAM" in m for m in mems), mems


def case_device_memory():
    """VRAM_SEG (untested on hardware here): the engine offers it only where CUDA memory can be
    registered; where not, NIXL refuses VRAM registrations for the backend, and DRAM transfers
    go on unharmed. Run on a machine with a GPU and an FI_HMEM provider this case checks that
    host memory passed off as VRAM is refused by the backend itself."""
    a, b = pair()
    offered = [str(m) for m in a.get_backend_mem_types("LOOM")]
    fake = np.zeros(4096, np.uint8)
    expect_raises(lambda: a.register_memory([(fake.ctypes.data, fake.nbytes, 0, "")], "VRAM", backends=["LOOM"]),
                  "host memory registered as VRAM (LOOM offers %s)" % offered)
    print("LOOM offers", offered)
    # NIXL 1.4.1 itself leaves A's agent metadata unloadable after a refused registration (UCX
    # alike), so only A loads B's metadata again: the write needs no more.
    src, dst = pattern(65536, 9), np.zeros(65536, np.uint8)
    register(a, src)
    register(b, dst)
    a.add_remote_agent(b.get_agent_metadata())
    h = a.initialize_xfer("WRITE", descs(a, src, 1)[0], descs(a, dst, 1)[0], "B")
    a.transfer(h)
    finish(a, h, [b])
    assert np.array_equal(src, dst)
    a.release_xfer_handle(h)


def case_sizes():
    """WRITE then READ, 1 B to 64 MiB, byte-exact, both directions, one descriptor."""
    a, b = pair()
    for size in [1, 7, 4096, 65536 + 3, 1 << 20, 16 << 20, 64 << 20]:
        for (ini, tgt, ini_name, tgt_name) in [(a, b, "A", "B"), (b, a, "B", "A")]:
            src, dst, back = pattern(size, size & 0xFF), np.zeros(size, np.uint8), np.zeros(size, np.uint8)
            regs = [register(ini, src), register(tgt, dst), register(ini, back)]
            refresh(a, b)
            h = ini.initialize_xfer("WRITE", descs(ini, src, 1)[0], descs(ini, dst, 1)[0], tgt_name)
            assert ini.transfer(h) in ("DONE", "PROC")
            finish(ini, h, [tgt])
            assert np.array_equal(src, dst), "WRITE %d %s->%s" % (size, ini_name, tgt_name)
            ini.release_xfer_handle(h)
            h = ini.initialize_xfer("READ", descs(ini, back, 1)[0], descs(ini, dst, 1)[0], tgt_name)
            ini.transfer(h)
            finish(ini, h, [tgt])
            assert np.array_equal(back, src), "READ %d" % size
            ini.release_xfer_handle(h)
            ini.deregister_memory(regs[0])
            tgt.deregister_memory(regs[1])
            ini.deregister_memory(regs[2])


def case_rails():
    """rails=2 fuses two NICs (tcp: lo and eth0) and stripes large descriptors over both:
    every byte in place both ways, notification after the data. One NIC (shm) refuses it."""
    prov = os.environ["LOOM_PROVIDER"]
    if prov == "shm":
        expect_raises(lambda: make_agent("A", rails=2), "two rails on a provider with one NIC")
        return
    if not os.path.exists("/sys/class/net/eth0"):
        print("skipped: needs the interfaces lo and eth0")
        return
    a, b = (make_agent(n, provider=prov, interfaces="lo,eth0", rails=2) for n in "AB")
    a.add_remote_agent(b.get_agent_metadata())
    b.add_remote_agent(a.get_agent_metadata())
    size = 32 << 20
    for (ini, tgt, ini_name, tgt_name) in [(a, b, "A", "B"), (b, a, "B", "A")]:
        src, dst, back = pattern(size, 3), np.zeros(size, np.uint8), np.zeros(size, np.uint8)
        regs = [register(ini, src), register(tgt, dst), register(ini, back)]
        refresh(a, b)
        for count in [1, 4]:
            dst[:] = 0
            h = ini.initialize_xfer("WRITE", descs(ini, src, count)[0], descs(ini, dst, count)[0], tgt_name, b"striped")
            ini.transfer(h)
            got = {}
            finish(ini, h, [tgt], got)
            if not got:
                got = wait_notifs(tgt, 1, [ini])
            assert got.get(ini_name) == [b"striped"], got
            assert np.array_equal(src, dst), "WRITE %d descriptors %s->%s" % (count, ini_name, tgt_name)
            ini.release_xfer_handle(h)
            back[:] = 0
            h = ini.initialize_xfer("READ", descs(ini, back, count)[0], descs(ini, dst, count)[0], tgt_name)
            ini.transfer(h)
            finish(ini, h, [tgt])
            assert np.array_equal(back, src), "READ %d descriptors" % count
            ini.release_xfer_handle(h)
        ini.deregister_memory(regs[0])
        tgt.deregister_memory(regs[1])
        ini.deregister_memory(regs[2])


def case_descriptors():
    """1 to 1,024 descriptors per transfer, scattered to the reverse order at the target."""
    a, b = pair()
    size = 1 << 20
    src, dst = pattern(size, 9), np.zeros(size, np.uint8)
    register(a, src)
    register(b, dst)
    refresh(a, b)
    for count in [1, 2, 16, 256, 1024]:
        dst[:] = 0
        each = size // count
        local = a.get_xfer_descs([(src.ctypes.data + i * each, each, 0) for i in range(count)], "DRAM")
        remote = a.get_xfer_descs([(dst.ctypes.data + (count - 1 - i) * each, each, 0) for i in range(count)], "DRAM")
        h = a.initialize_xfer("WRITE", local, remote, "B", b"n%d" % count)
        a.transfer(h)
        got = {}
        finish(a, h, [b], got)
        for i in range(count):
            j = count - 1 - i
            assert np.array_equal(dst[j * each:(j + 1) * each], src[i * each:(i + 1) * each]), (count, i)
        if not got:
            got = wait_notifs(b, 1, [a])
        assert got == {"A": [b"n%d" % count]}, got
        a.release_xfer_handle(h)


def case_notifications():
    """In order, with their contents, each only after the data it announces."""
    a, b = pair()
    size = 4 << 20
    src, dst = pattern(size, 1), np.zeros(size, np.uint8)
    register(a, src)
    register(b, dst)
    refresh(a, b)
    h = a.initialize_xfer("WRITE", descs(a, src, 4)[0], descs(a, dst, 4)[0], "B", b"first")
    seen = []
    for r in range(6):
        src[0] = r
        src[-1] = 255 - r
        a.transfer(h, b"round %d" % r)
        while len(seen) < r + 1:
            for msgs in b.get_new_notifs().values():
                for m in msgs:
                    assert dst[0] == r and dst[-1] == 255 - r, "notification before its data"
                    seen.append(m)
            a.check_xfer_state(h)
        finish(a, h, [b])
    assert seen == [b"round %d" % r for r in range(6)], seen
    b.send_notif("A", b"back")
    assert wait_notifs(a, 1, [b]) == {"B": [b"back"]}
    big = bytes(range(256)) * 100
    a.send_notif("B", big)
    assert wait_notifs(b, 1, [a]) == {"A": [big]}


def case_one_thread_both_ways():
    """Two agents, one thread, no progress thread: transfers in both directions at once."""
    a, b = pair()
    size = 8 << 20
    sa, da, sb, db = pattern(size, 1), np.zeros(size, np.uint8), pattern(size, 2), np.zeros(size, np.uint8)
    for agent, buf in [(a, sa), (a, da), (b, sb), (b, db)]:
        register(agent, buf)
    refresh(a, b)
    ha = a.initialize_xfer("WRITE", descs(a, sa, 8)[0], descs(a, db, 8)[0], "B", b"a")
    hb = b.initialize_xfer("WRITE", descs(b, sb, 8)[0], descs(b, da, 8)[0], "A", b"b")
    for _ in range(3):
        a.transfer(ha)
        b.transfer(hb)
        t0 = time.time()
        states = ("PROC", "PROC")
        while states != ("DONE", "DONE"):
            states = (a.check_xfer_state(ha), b.check_xfer_state(hb))
            assert "ERR" not in states and time.time() - t0 < DEADLINE_S, states
        assert np.array_equal(sa, db) and np.array_equal(sb, da)


def case_local():
    """A transfer within one agent."""
    a = make_agent("A")
    src, dst = pattern(1 << 20, 5), np.zeros(1 << 20, np.uint8)
    register(a, src)
    register(a, dst)
    h = a.initialize_xfer("WRITE", descs(a, src, 4)[0], descs(a, dst, 4)[0], "A", b"self")
    a.transfer(h)
    finish(a, h)
    assert np.array_equal(src, dst)
    assert wait_notifs(a, 1) == {"A": [b"self"]}


def case_progress_thread():
    a = make_agent("A", progress_thread=1, progress_delay_us=100)
    b = make_agent("B", progress_thread=1)
    src, dst = pattern(1 << 20, 3), np.zeros(1 << 20, np.uint8)
    register(a, src)
    register(b, dst)
    a.add_remote_agent(b.get_agent_metadata())
    h = a.initialize_xfer("WRITE", descs(a, src, 2)[0], descs(a, dst, 2)[0], "B", b"bg")
    a.transfer(h)
    assert wait_notifs(b, 1) == {"A": [b"bg"]}
    assert np.array_equal(src, dst)
    finish(a, h)


def case_bad_input():
    a, b = pair()
    src, dst = pattern(65536, 1), np.zeros(65536, np.uint8)
    register(a, src)
    register(b, dst)
    refresh(a, b)
    local1, _ = descs(a, src, 1)
    remote1, _ = descs(a, dst, 1)
    expect_raises(lambda: a.initialize_xfer("WRITE", local1, remote1, "nobody"), "an unknown agent")
    outside = a.get_xfer_descs([(dst.ctypes.data + 65536 - 100, 200, 0)], "DRAM")
    expect_raises(lambda: a.initialize_xfer("WRITE", a.get_xfer_descs([(src.ctypes.data, 200, 0)], "DRAM"), outside, "B"),
                  "a remote descriptor past its registration")
    unreg = np.zeros(4096, np.uint8)
    expect_raises(lambda: a.initialize_xfer("WRITE", a.get_xfer_descs([(unreg.ctypes.data, 4096, 0)], "DRAM"),
                                            a.get_xfer_descs([(dst.ctypes.data, 4096, 0)], "DRAM"), "B"),
                  "an unregistered local buffer")
    expect_raises(lambda: a.initialize_xfer("WRITE", descs(a, src, 2)[0], remote1, "B"), "mismatched descriptor counts")
    expect_raises(lambda: a.initialize_xfer("WRITE", a.get_xfer_descs([(src.ctypes.data, 100, 0)], "DRAM"),
                                            a.get_xfer_descs([(dst.ctypes.data, 200, 0)], "DRAM"), "B"),
                  "mismatched lengths")
    # Corrupted metadata of a third agent. Damage inside our own strings (connection info
    # "LMCI", public data "LMPD", which NIXL hands to the backend as they are) must be refused;
    # damage elsewhere is NIXL's to find and only must not crash. The intact metadata loads after.
    c = make_agent("C")
    c_buf = np.zeros(4096, np.uint8)
    register(c, c_buf)
    md = c.get_agent_metadata()
    flip = lambda i: md[:i] + bytes([md[i] ^ 0x10]) + md[i + 1:]

    def forget_c():
        try:
            a.remove_remote_agent("C")
        except Exception:
            pass
    ours = [(md.find(b"LMCI"), 136), (md.find(b"LMPD"), 176)]  # each shorter than its string
    for at, n in ours:
        assert at >= 0, "our string is not in the agent metadata"
        for i in range(at, at + n, 5):
            expect_raises(lambda: a.add_remote_agent(flip(i)), "metadata damaged at byte %d" % i)
            forget_c()
    for bad in [md[: len(md) // 2], md[:-1]] + [flip(i) for i in range(0, len(md), max(1, len(md) // 40))]:
        try:
            a.add_remote_agent(bad)
        except Exception:
            pass
        forget_c()
    a.add_remote_agent(md)
    local_c = a.get_xfer_descs([(c_buf.ctypes.data, 4096, 0)], "DRAM")
    h = a.initialize_xfer("WRITE", a.get_xfer_descs([(src.ctypes.data, 4096, 0)], "DRAM"), local_c, "C")
    a.transfer(h)
    finish(a, h, [c])
    assert np.array_equal(c_buf, src[:4096]), "the intact metadata after damaged copies"
    a.release_xfer_handle(h)
    # Release of a transfer in flight: the backend lets it end unseen; later ones still work.
    big_src, big_dst = pattern(32 << 20, 2), np.zeros(32 << 20, np.uint8)
    register(a, big_src)
    register(b, big_dst)
    refresh(a, b)
    h = a.initialize_xfer("WRITE", descs(a, big_src, 1)[0], descs(a, big_dst, 1)[0], "B")
    a.transfer(h)
    a.release_xfer_handle(h)
    h = a.initialize_xfer("WRITE", descs(a, big_src, 1)[0], descs(a, big_dst, 1)[0], "B")
    a.transfer(h)
    finish(a, h, [b])
    assert np.array_equal(big_src, big_dst)
    a.release_xfer_handle(h)
    # A transfer to an agent removed since: an error, not a crash.
    h = a.initialize_xfer("WRITE", local1, remote1, "B")
    a.remove_remote_agent("B")
    expect_raises(lambda: finish(a, h, [b]) if a.transfer(h) != "ERR" else (_ for _ in ()).throw(RuntimeError()),
                  "a transfer to a removed agent")


def case_options():
    """Backend parameters in place of LOOM_*: bad values refused, the process's first agent
    sets provider and eager limit, a later agent asking for others is refused."""
    for bad in [dict(rails=9), dict(rails=0), dict(rails="two"), dict(eager_max="lots"), dict(interfaces=","),
                dict(provider=""), dict(device="x"), dict(no_such_option=1)]:
        expect_raises(lambda: make_agent("bad", **bad), "backend parameters %s" % bad)
    # The provider parameter reaches discovery: one that does not exist leaves no device.
    child = subprocess.run([sys.executable, __file__, "options_child"], capture_output=True, timeout=120)
    assert child.returncode == 0, child.stdout.decode() + child.stderr.decode()
    prov = os.environ["LOOM_PROVIDER"]
    a = make_agent("A", provider=prov, eager_max="4k")
    b = make_agent("B", provider=prov, eager_max="4k")
    a.add_remote_agent(b.get_agent_metadata())
    b.add_remote_agent(a.get_agent_metadata())
    src, dst = pattern(1 << 20, 5), np.zeros(1 << 20, np.uint8)
    register(a, src)
    register(b, dst)
    refresh(a, b)
    local, n = descs(a, src, 4)
    remote, _ = descs(a, dst, 4)
    h = a.initialize_xfer("WRITE", local, remote, "B", b"opt")
    assert a.transfer(h) != "ERR"
    got = {}
    finish(a, h, [b], got)
    if not got:
        got = wait_notifs(b, 1, [a])
    assert got.get("A") == [b"opt"], got
    assert np.array_equal(src[:n], dst[:n])
    a.release_xfer_handle(h)
    other = "udp;ofi_rxd" if prov != "udp;ofi_rxd" else "tcp"
    expect_raises(lambda: make_agent("C", provider=other), "a second provider in one process")
    expect_raises(lambda: make_agent("D", eager_max="8k"), "a second eager limit in one process")


def options_child():
    expect_raises(lambda: make_agent("A", provider="no-such-provider"), "a provider that does not exist")
    return 0


def case_teardown_orders():
    for order in ["ab", "ba"]:
        a, b = pair()
        src, dst = pattern(1 << 20, 1), np.zeros(1 << 20, np.uint8)
        register(a, src)
        register(b, dst)
        refresh(a, b)
        h = a.initialize_xfer("WRITE", descs(a, src, 1)[0], descs(a, dst, 1)[0], "B", b"x")
        a.transfer(h)
        finish(a, h, [b])
        # The agents go in the order named: each is referenced by one name only.
        if order == "ab":
            a = None
            b = None
        else:
            b = None
            a = None


# ------------------------------------------------------------------------------ two processes
def child_target(size):
    """Child: agent B with a registered buffer; its address and metadata out on stdout, A's
    metadata in on stdin; checks what A wrote once A's notification is there."""
    b = make_agent("B")
    dst = np.zeros(size, np.uint8)
    register(b, dst)
    sys.stdout.write("LOOM-MD %d %s\n" % (dst.ctypes.data, b.get_agent_metadata().hex()))
    sys.stdout.flush()
    b.add_remote_agent(bytes.fromhex(sys.stdin.readline().strip()))
    got = wait_notifs(b, 1)
    ok = got == {"A": [b"from A"]} and np.array_equal(dst, pattern(size, 7))
    b.send_notif("A", b"ok" if ok else b"bad")
    sys.stdin.readline()  # stays until the parent is done with it (or kills it)
    return 0


def start_child(size):
    child = subprocess.Popen([sys.executable, __file__, "child", str(size)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    line = ""
    while not line.startswith("LOOM-MD "):  # NIXL logs to stdout too
        line = child.stdout.readline()
        assert line, "the child ended before giving its metadata"
    _, addr, md = line.split()
    return child, int(addr), bytes.fromhex(md)


def case_two_processes():
    size = 16 << 20
    child, addr, md = start_child(size)
    try:
        a = make_agent("A")
        src, back = pattern(size, 7), np.zeros(size, np.uint8)
        register(a, src)
        register(a, back)
        a.add_remote_agent(md)
        child.stdin.write(a.get_agent_metadata().hex() + "\n")
        child.stdin.flush()
        remote = a.get_xfer_descs([(addr + i * (size // 64), size // 64, 0) for i in range(64)], "DRAM")
        h = a.initialize_xfer("WRITE", descs(a, src, 64)[0], remote, "B", b"from A")
        a.transfer(h)
        finish(a, h)
        assert wait_notifs(a, 1) == {"B": [b"ok"]}, "the child saw other bytes"
        h = a.initialize_xfer("READ", descs(a, back, 64)[0], remote, "B")
        a.transfer(h)
        finish(a, h)
        assert np.array_equal(back, src)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(timeout=DEADLINE_S) == 0
    finally:
        if child.poll() is None:
            child.kill()


def case_killed_peer():
    """A killed target fails the transfers waiting on it within LOOM_PEER_TIMEOUT_MS."""
    size = 64 << 20
    child, addr, md = start_child(size)
    a = make_agent("A")
    src = pattern(size, 7)
    register(a, src)
    a.add_remote_agent(md)
    child.stdin.write(a.get_agent_metadata().hex() + "\n")  # the child then polls its agent
    child.stdin.flush()
    remote = a.get_xfer_descs([(addr, size, 0)], "DRAM")
    h = a.initialize_xfer("WRITE", descs(a, src, 1)[0], remote, "B")
    a.transfer(h)
    finish(a, h)
    child.send_signal(signal.SIGKILL)
    child.wait()
    limit = int(os.environ.get("LOOM_PEER_TIMEOUT_MS", "5000")) / 1000.0
    t0 = time.time()
    state = "PROC"
    try:
        for _ in range(20):  # later transfers fail too
            state = a.transfer(h)
            while state == "PROC" and time.time() - t0 < limit * 3:
                state = a.check_xfer_state(h)
            print("after kill: %s at %.2f s" % (state, time.time() - t0))
            if state == "ERR":
                break
    except Exception:
        state = "ERR"
    elapsed = time.time() - t0
    assert state == "ERR", "transfers to a killed peer did not fail (%s after %.1f s)" % (state, elapsed)
    assert elapsed < limit * 3, "failed after %.1f s, LOOM_PEER_TIMEOUT_MS %.1f s" % (elapsed, limit)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "child":
        return child_target(int(sys.argv[2]))
    if len(sys.argv) >= 2 and sys.argv[1] == "options_child":
        return options_child()
    name = sys.argv[1]
    globals()["case_" + name]()
    print("ok:", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
