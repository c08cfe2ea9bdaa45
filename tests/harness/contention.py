"""A paused recording must not starve the threads that wait for the GVL.

    RUBY/record-contention   corestack record --pid (paused, 100 Hz) for 4 s on
                             fixtures/profile/contention.rb, whose main thread
                             sleeps 0.2 s and prints a line, in a loop, beside a
                             CPU-bound thread: at least a quarter of the lines it
                             prints unrecorded must come during the recording.
                             Stopping Ruby 3.3's timer thread at every sample
                             restarts its epoll_wait timeout, no time slice ever
                             ends, and the main thread printed 0 or 1 line.

A generous bound: on a loaded machine the lines come late, not never.
"""

import os
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "fixtures", "profile", "contention.rb")
INTERVAL = 0.2
RECORD_SECONDS = 4
SHARE = 0.25


def test_name(ruby):
    return "%s/record-contention" % ruby


def contention_test(rep, selected, corestack, ruby, exe, timeout):
    name = test_name(ruby)
    if not selected(name):
        return
    target = subprocess.Popen([exe, SCRIPT, str(INTERVAL)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stamps = []

    def read():
        for line in target.stdout:
            if line.startswith("progress "):
                stamps.append(time.monotonic())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while len(stamps) < 3 and time.monotonic() < deadline:   # running, threads started
            time.sleep(0.05)
        if len(stamps) < 3:
            rep.result(name, "the program printed %d lines in 60 s" % len(stamps))
            return
        start = time.monotonic()
        res = subprocess.run([corestack, "record", "--pid", str(target.pid), "--rate", "100",
                              "--duration", str(RECORD_SECONDS), "-o", os.devnull],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=timeout)
        end = time.monotonic()
        if res.returncode != 0:
            rep.result(name, "record exited %d: %s" % (res.returncode, res.stderr.strip()[-200:]))
            return
        during = sum(1 for t in stamps if start + 0.5 <= t <= end)
        expected = (end - start - 0.5) / INTERVAL
        if during < SHARE * expected:
            rep.result(name, "the main thread printed %d lines in %.1f s of recording, "
                       "about %.0f unrecorded: the recording starves it" % (
                           during, end - start - 0.5, expected))
        else:
            rep.result(name, None)
    except subprocess.TimeoutExpired:
        rep.result(name, "record hung")
    finally:
        target.kill()
        target.wait()
