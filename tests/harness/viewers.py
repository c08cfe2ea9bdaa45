"""Profiles opened in the viewers people read them with, once per run, on
the first fixture Ruby given:

    viewers/speedscope   record --format speedscope -- shares.rb, loaded in
                         speedscope's own web app (the npm package of
                         tests/viewers/package.json) by headless Chromium from
                         a local HTTP server: the page's sandwich table lists
                         the methods the program ran (Object#heavy,
                         Object#light, their blocks, Integer#times,
                         Kernel#loop) with the totals the file gives them,
                         heavy over light; the page's screenshot is kept as
                         viewers/speedscope.png in the work directory
                         (--keep DIR keeps it)
"""

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

from . import procs
from .checks import first_line

TESTS = ("viewers/speedscope",)

SPEEDSCOPE_APP = os.path.join(procs.ROOT, "tests", "viewers", "node_modules", "speedscope",
                              "dist", "release")
# What shares.rb runs, as Ruby names it: the program's own methods, their
# blocks, and the loops that call them.
SHARES_METHODS = ("Object#heavy", "Object#light", "block in Object#heavy",
                  "block in Object#light", "Integer#times", "Kernel#loop")


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Server:
    """An HTTP server on 127.0.0.1 (a free port) for one directory, and
    one more file at /profile.json; stopped when the block ends."""

    def __init__(self, directory, profile):
        class Handler(http.server.SimpleHTTPRequestHandler):
            def translate_path(self, path):
                if path.split("?")[0] == "/profile.json":
                    return profile
                return super().translate_path(path)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=directory))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def load_page(url, screenshot, timeout):
    """The DOM of url once headless Chromium has run its scripts (in
    virtual time: loading the profile's fetch holds the clock), and its
    screenshot written to screenshot."""
    with tempfile.TemporaryDirectory(prefix="corestack-chromium-") as profile_dir:
        env = procs.quiet_env({"DBUS_SESSION_BUS_ADDRESS": "disabled:", "HOME": profile_dir})
        res = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--no-first-run",
             "--enable-unsafe-swiftshader", "--user-data-dir=" + profile_dir,
             "--virtual-time-budget=5000", "--window-size=1280,720",
             "--screenshot=" + screenshot, "--dump-dom", url],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, timeout=timeout, env=env)
    if res.returncode != 0:
        raise RuntimeError("chromium exit %d: %s" % (res.returncode, first_line(res.stderr)))
    return res.stdout


def sandwich_rows(dom):
    """speedscope's sandwich table: {symbol name: (total, self)}."""
    text = re.sub(r"<(style|script)\b.*?</\1>", "", dom, flags=re.S)
    cells = [html.unescape(c).strip() for c in re.split(r"<[^>]*>", text)]
    cells = [c for c in cells if c]
    if "Symbol Name" not in cells:
        return {}
    cells = cells[cells.index("Symbol Name") + 1:]
    rows = {}
    count = re.compile(r"^(\d+) \(.*\)$")
    for i in range(len(cells) - 2):
        total, own = count.match(cells[i]), count.match(cells[i + 1])
        if total and own and not count.match(cells[i + 2]):
            rows[cells[i + 2]] = (int(total.group(1)), int(own.group(1)))
    return rows


def file_totals(path):
    """Each frame name's total in the speedscope file: the weight of the
    samples whose stack holds it (once per sample)."""
    with open(path) as f:
        doc = json.load(f)
    names = [fr["name"] for fr in doc["shared"]["frames"]]
    totals = {}
    for prof in doc["profiles"]:
        for stack, weight in zip(prof["samples"], prof["weights"]):
            for name in {names[i] for i in stack}:
                totals[name] = totals.get(name, 0) + weight
    return totals, [prof["name"] for prof in doc["profiles"]]


def check_speedscope_viewer(js, screenshot, timeout):
    if not os.path.exists(os.path.join(SPEEDSCOPE_APP, "index.html")):
        return "no speedscope app in %s: make deps installs it (npm ci)" % SPEEDSCOPE_APP
    if not chromium():
        return "no chromium: make deps installs it"
    with Server(SPEEDSCOPE_APP, js) as base:
        dom = load_page(base + "/index.html#profileURL=%2Fprofile.json&view=sandwich",
                        screenshot, timeout)
    rows = sandwich_rows(dom)
    if not rows:
        return "the page shows no sandwich table: %s" % first_line(re.sub(r"<[^>]*>", " ", dom))
    totals, threads = file_totals(js)
    if not any(t in dom for t in threads):
        return "the page names no thread of %s" % threads
    missing = [m for m in SHARES_METHODS if m not in rows]
    if missing:
        return "the page lists no %s: %s" % (", ".join(missing), sorted(rows))
    for name in SHARES_METHODS:
        if rows[name][0] != totals.get(name):
            return "the page gives %s a total of %d, the file %s" % (
                name, rows[name][0], totals.get(name))
    if rows["Object#heavy"][0] < 1.5 * rows["Object#light"][0]:
        return "heavy %d samples, light %d: heavy does 3x the work" % (
            rows["Object#heavy"][0], rows["Object#light"][0])
    if not os.path.getsize(screenshot):
        return "an empty screenshot"
    return None


def viewer_tests(rep, selected, args, prefixes, workdir):
    """Each viewer loads one recording of the first fixture Ruby."""
    if not selected("viewers/speedscope"):
        return
    ruby = next((r for r in args.rubies if isinstance(prefixes.get(r), str)), None)
    if ruby is None:
        rep.skip("viewers/speedscope", "no fixture Ruby built")
        return
    out = os.path.join(workdir, "viewers")
    os.makedirs(out, exist_ok=True)
    js = os.path.join(out, "speedscope.json")
    exe = os.path.join(prefixes[ruby], "bin", "ruby")
    try:
        res = subprocess.run([args.corestack, "record", "--duration", "20", "--format",
                              "speedscope", "-o", js, "--", exe, procs.SHARES, "1.5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout)
        if res.returncode != 0:
            reason = "record exit %d: %s" % (res.returncode, first_line(res.stderr))
        else:
            reason = check_speedscope_viewer(js, os.path.join(out, "speedscope.png"),
                                             args.timeout)
    except subprocess.TimeoutExpired:
        reason = "record or chromium hung"
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        reason = str(exc)
    rep.result("viewers/speedscope", reason)
