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
    viewers/speedscope-timeline
                         record --format speedscope -- phases.rb, which
                         spins in alpha, beta, then alpha again and writes
                         when each phase began and ended: the file loaded in
                         speedscope's web app and exported by its own Export
                         button (its time-order calls, as it reads them);
                         the phases in the program's order, their lengths
                         within 60 ms and 15 % of what it measured, in a
                         unit of time; their frames at the file and line
                         Ruby gives them
    viewers/flamegraph   record -o F.svg -- shares.rb, opened by headless
                         Chromium with #s=^Object#heavy$&z=Object#light (the
                         SVG's own script searches and zooms as it opens): a
                         title with the samples record reported, heavy's
                         boxes coloured and "Matched:" their share of the
                         samples the file's boxes give, light spread over
                         the whole width with its callees in proportion, its
                         callers faded below, heavy hidden
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

TESTS = ("viewers/speedscope", "viewers/speedscope-timeline", "viewers/flamegraph")

SPEEDSCOPE_APP = os.path.join(procs.ROOT, "tests", "viewers", "node_modules", "speedscope",
                              "dist", "release")
# What shares.rb runs, as Ruby names it: the program's own methods, their
# blocks, and the loops that call them.
PHASES = os.path.join(procs.ROOT, "fixtures", "profile", "phases.rb")
PHASE_SECONDS = (0.5, 0.3, 0.4)
# Nanoseconds in speedscope's units of time.
TIME_UNITS = {"nanoseconds": 1, "microseconds": 1e3, "milliseconds": 1e6,
              "seconds": 1e9}
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
    one more file at /profile.json (and more: extra maps a path to a
    file); stopped when the block ends."""

    def __init__(self, directory, profile, extra=None):
        files = dict(extra or {}, **{"/profile.json": profile})

        class Handler(http.server.SimpleHTTPRequestHandler):
            def translate_path(self, path):
                if path.split("?")[0] in files:
                    return files[path.split("?")[0]]
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


# What speedscope's sandwich table writes after a time, in nanoseconds.
SHOWN_UNITS = {"ns": 1, "\u00b5s": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9,
               "min": 60e9, "h": 3600e9}


def sandwich_rows(dom):
    """speedscope's sandwich table: {symbol name: (total, self)}, counts
    or times in nanoseconds."""
    text = re.sub(r"<(style|script)\b.*?</\1>", "", dom, flags=re.S)
    cells = [html.unescape(c).strip() for c in re.split(r"<[^>]*>", text)]
    cells = [c for c in cells if c]
    if "Symbol Name" not in cells:
        return {}
    cells = cells[cells.index("Symbol Name") + 1:]
    rows = {}
    value = re.compile(r"^([\d.]+)(%s)? \(.*\)$" % "|".join(SHOWN_UNITS))

    def parse(cell):
        m = value.match(cell)
        return m and float(m.group(1)) * SHOWN_UNITS.get(m.group(2), 1)
    for i in range(len(cells) - 2):
        total, own = parse(cells[i]), parse(cells[i + 1])
        if total is not None and own is not None and parse(cells[i + 2]) is None:
            # a method at several lines is one row per line
            was = rows.get(cells[i + 2], (0, 0))
            rows[cells[i + 2]] = (was[0] + total, was[1] + own)
    return rows


def shown_as(shown, exact):
    """Whether a value the page shows (three digits or so) is exact."""
    return abs(shown - exact) <= 0.005 * max(abs(exact), 1)


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
        if name not in totals or not shown_as(rows[name][0], totals[name]):
            return "the page gives %s a total of %g, the file %s" % (
                name, rows[name][0], totals.get(name))
    if rows["Object#heavy"][0] < 1.5 * rows["Object#light"][0]:
        return "heavy %g, light %g: heavy does 3x the work" % (
            rows["Object#heavy"][0], rows["Object#light"][0])
    if not os.path.getsize(screenshot):
        return "an empty screenshot"
    return None


# Put before speedscope's own script in its page: once the profile is
# loaded, clicks the toolbar's Export, and writes the file speedscope saves
# into the page (a <pre id="corestack-export">) instead of downloading it.
EXPORT_HOOK = """<script>
(function () {
  var saved = false;
  HTMLAnchorElement.prototype.click = function () {
    if (!this.download || saved)
      return;
    saved = true;
    fetch(this.href).then(function (r) { return r.text(); }).then(function (t) {
      var pre = document.createElement("pre");
      pre.id = "corestack-export";
      pre.textContent = t;
      document.body.appendChild(pre);
    });
  };
  var tries = 0, timer = setInterval(function () {
    if (saved || ++tries > 40)
      return clearInterval(timer);
    document.querySelectorAll("div").forEach(function (d) {
      if (!saved && d.children.length === 1 && /Export$/.test(d.textContent))
        d.click();
    });
  }, 100);
})();
</script>
"""


def exported(dom):
    """The file speedscope's Export wrote, from the hooked page."""
    m = re.search(r'<pre id="corestack-export">(.*?)</pre>', dom, flags=re.S)
    return json.loads(html.unescape(m.group(1))) if m else None


def phase_calls(doc, methods=("Object#alpha", "Object#beta"), profiles=None):
    """Each call of methods in speedscope's time order (an evented profile
    of its export; of the named profiles only, when given): (name, start,
    end) in nanoseconds, calls of one method with nothing between them
    joined."""
    names = [fr["name"] for fr in doc["shared"]["frames"]]
    calls = []
    for prof in doc["profiles"]:
        if profiles is not None and prof.get("name") not in profiles:
            continue
        scale = TIME_UNITS.get(prof.get("unit"))
        if scale is None:
            raise ValueError("speedscope reads the unit %r, no unit of time"
                             % prof.get("unit"))
        opened = {}
        for ev in prof["events"]:
            name = names[ev["frame"]]
            if name not in methods:
                continue
            if ev["type"] == "O":
                opened.setdefault(name, ev["at"] * scale)
            elif name in opened:
                start = opened.pop(name)
                if calls and calls[-1][0] == name and calls[-1][2] == start:
                    calls[-1] = (name, calls[-1][1], ev["at"] * scale)
                else:
                    calls.append((name, start, ev["at"] * scale))
    return sorted(calls, key=lambda c: c[1])


def speedscope_missing():
    """Why speedscope's app cannot load a file here, or None."""
    if not os.path.exists(os.path.join(SPEEDSCOPE_APP, "index.html")):
        return "no speedscope app in %s: make deps installs it (npm ci)" % SPEEDSCOPE_APP
    if not chromium():
        return "no chromium: make deps installs it"
    return None


def speedscope_export(js, timeout):
    """Speedscope file js as speedscope's web app reads it: the file its
    Export button writes (RuntimeError when it writes none)."""
    with open(os.path.join(SPEEDSCOPE_APP, "index.html")) as f:
        page = f.read().replace("<script", EXPORT_HOOK + "<script", 1)
    with tempfile.NamedTemporaryFile("w", suffix=".html") as hooked:
        hooked.write(page)
        hooked.flush()
        with Server(SPEEDSCOPE_APP, js, {"/export.html": hooked.name}) as base:
            with tempfile.NamedTemporaryFile(suffix=".png") as shot:
                dom = load_page(base + "/export.html#profileURL=%2Fprofile.json",
                                shot.name, timeout)
    doc = exported(dom)
    if doc is None:
        raise RuntimeError("speedscope exported nothing: %s"
                           % first_line(re.sub(r"<[^>]*>", " ", dom)))
    return doc


def check_speedscope_timeline(js, truth, timeout):
    missing = speedscope_missing()
    if missing:
        return missing
    doc = speedscope_export(js, timeout)
    for name, _, _, path, line in truth:
        for fr in doc["shared"]["frames"]:
            if fr["name"] == name and (fr.get("file"), fr.get("line")) != (path, line):
                return "speedscope reads %s at %s:%s, Ruby gives %s:%d" % (
                    name, fr.get("file"), fr.get("line"), path, line)
    calls = phase_calls(doc)
    names = [c[0] for c in calls]
    want = [p[0] for p in truth]
    if names != want:
        return "speedscope's time order calls %s, the program %s" % (names, want)
    for (name, start, end), (_, t0, t1, _, _) in zip(calls, truth):
        got, real = (end - start) / 1e9, t1 - t0
        if abs(got - real) > 0.06 + 0.15 * real:
            return "speedscope's %s lasts %.3f s, the program measured %.3f s" % (
                name, got, real)
    gap, real_gap = calls[1][1] - calls[0][1], truth[1][1] - truth[0][1]
    if abs(gap / 1e9 - real_gap) > 0.06 + 0.15 * real_gap:
        return "speedscope starts beta %.3f s after alpha, the program %.3f s" % (
            gap / 1e9, real_gap)
    return None


def timeline_test(rep, args, exe, out):
    js = os.path.join(out, "timeline.speedscope.json")
    truth_path = os.path.join(out, "phases.json")
    try:
        res = subprocess.run([args.corestack, "record", "--duration", "20", "--format",
                              "speedscope", "-o", js, "--", exe, PHASES, truth_path]
                             + ["%g" % s for s in PHASE_SECONDS],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout)
        if res.returncode != 0:
            reason = "record exit %d: %s" % (res.returncode, first_line(res.stderr))
        else:
            with open(truth_path) as f:
                truth = json.load(f)
            reason = check_speedscope_timeline(js, truth, args.timeout)
    except subprocess.TimeoutExpired:
        reason = "record or chromium hung"
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        reason = str(exc)
    rep.result("viewers/speedscope-timeline", reason)


SVG_BOX = re.compile(r'<g class="f"(?: style="([^"]*)")?><title>(.*?) \((\d+) samples?\)</title>'
                     r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*fill="([^"]*)"')


def check_flamegraph_viewer(svg, said, timeout):
    """The SVG's script, run by Chromium: a search and a zoom given after
    its address."""
    if not chromium():
        return "no chromium: make deps installs it"
    reported = re.search(r"(\d+) samples in", said)
    with open(svg) as f:
        boxes = SVG_BOX.findall(f.read())
    counts = {}
    for _, name, count, _, _, _ in boxes:
        counts[name] = counts.get(name, 0) + int(count)
    with tempfile.NamedTemporaryFile(suffix=".png") as shot:
        dom = load_page("file://%s#s=%s&z=%s" % (svg, "%5EObject%23heavy%24", "Object%23light"),
                        shot.name, timeout)
    title = re.search(r'<text id="title"[^>]*>([^<]*)<', dom)
    if not title or not reported or "%s samples" % reported.group(1) not in title.group(1):
        return "title %r, record reported %s samples" % (
            title.group(1) if title else None, reported.group(1) if reported else "no")
    matched = re.search(r'<text id="matched"[^>]*>Matched: ([\d.]+)%<', dom)
    share = 100.0 * counts.get("Object#heavy", 0) / counts.get("all", 1)
    if not matched or abs(float(matched.group(1)) - share) > 0.2:
        return "the search says %r, heavy has %.1f%% of the file's samples" % (
            matched.group(0) if matched else None, share)
    if not 40 < share < 95:
        return "heavy has %.1f%% of the samples: it does 3x light's work" % share
    shown = SVG_BOX.findall(dom)
    light = [b for b in shown if b[1] == "Object#light"]
    if not light or float(light[0][4]) < 1199 or "display" in light[0][0]:
        return "Object#light not spread over the width: %s" % (light[:1],)
    light_count = int(light[0][2])
    for style, name, count, x, width, fill in shown:
        if name == "Object#heavy" and "display: none" not in style:
            return "Object#heavy shown while zoomed into light"
        if name == "Object#heavy" and fill != "rgb(230,0,230)":
            return "Object#heavy not coloured by the search: %s" % fill
        if name in ("<main>", "Kernel#loop") and "opacity: 0.5" not in style:
            return "%s, light's caller, not faded below it: %r" % (name, style)
        if name == "block in Object#light":
            want = 1200.0 * int(count) / light_count
            if abs(float(width) - want) > 1:
                return "block in Object#light %s px wide, %.1f for its samples" % (width, want)
    return None


def flamegraph_test(rep, args, exe, out):
    svg = os.path.join(out, "flamegraph.svg")
    try:
        res = subprocess.run([args.corestack, "record", "--duration", "20", "-o", svg,
                              "--", exe, procs.SHARES, "1.5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout)
        if res.returncode != 0:
            reason = "record exit %d: %s" % (res.returncode, first_line(res.stderr))
        else:
            reason = check_flamegraph_viewer(svg, res.stderr, args.timeout)
    except subprocess.TimeoutExpired:
        reason = "record or chromium hung"
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        reason = str(exc)
    rep.result("viewers/flamegraph", reason)


def names(ctx):
    return list(TESTS) if ctx.rubies else []


def rubies(ctx):
    """The first Ruby records what the viewers load."""
    return {ctx.rubies[0]} if ctx.rubies and ctx.any_selected(TESTS) else set()


def run_tests(ctx):
    """Each viewer loads one recording of the first fixture Ruby."""
    rep, selected, args, prefixes, workdir = ctx.rep, ctx.selected, ctx.args, ctx.prefixes, ctx.workdir
    chosen = [t for t in TESTS if selected(t)]
    if not chosen:
        return
    ruby = next((r for r in args.rubies if isinstance(prefixes.get(r), str)), None)
    if ruby is None:
        for t in chosen:
            rep.skip(t, "no fixture Ruby built")
        return
    out = os.path.join(workdir, "viewers")
    os.makedirs(out, exist_ok=True)
    exe = os.path.join(prefixes[ruby], "bin", "ruby")
    if selected("viewers/speedscope-timeline"):
        timeline_test(rep, args, exe, out)
    if selected("viewers/flamegraph"):
        flamegraph_test(rep, args, exe, out)
    if not selected("viewers/speedscope"):
        return
    js = os.path.join(out, "speedscope.json")
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
