"""Python stacks, sampled inside windows only.

A daemon thread reads every thread's Python stack (sys._current_frames) at
a fixed rate while a window is open and counts each distinct (thread,
stack of file, line, function); outside windows it only polls the window
flag. The counts go to <run dir>/python-stacks-<host>-<pid>.json (written
whole, temporary name then rename) when a window closes, every
WRITE_EVERY_S while one is open, and at exit.

The window flag is one byte of an anonymous shared mapping, created before
the job forks its DataLoader workers and set by the process that marks
steps: a forked worker inherits the mapping, so it sees its parent's
windows with no message passing, and starts its own sampler thread and
file (its pid, its parent's pid). Workers started with "spawn" or
"forkserver" have no window flag and are not sampled.

Samples are of wall time: a thread blocked in a queue's get is sampled
where it waits. Memory is bounded: at most MAX_STACKS distinct stacks
(later new ones are counted as dropped) of at most MAX_DEPTH frames (deeper
frames are cut, counted as truncated). The sampler's own CPU time is
measured and written. Any error turns the sampler off for the rest of the
process and is written to the file; the job never sees it.

Rate: SCALESCOPE_PYTHON_SAMPLING_HZ (`scalescope profile
--python-sampling-hz`), DEFAULT_HZ when unset, 0 = off.
"""

import os
import sys
import time
import _thread

ENV_HZ = "SCALESCOPE_PYTHON_SAMPLING_HZ"
DEFAULT_HZ = 100.0
MAX_HZ = 1000.0
MAX_STACKS = 2000  # distinct (thread, stack) pairs kept per process
MAX_DEPTH = 64  # frames kept per stack, from the leaf
MAX_ERRORS = 20
CLOSED_POLL_S = 0.05  # how often the flag is read while no window is open
WRITE_EVERY_S = 10.0  # a worker killed mid-window leaves counts this old at most
KIND = "scalescope python stacks"
FILE_PREFIX = "python-stacks-"


def rate_from_env(environ=None):
    """The sampling rate asked for: DEFAULT_HZ unless set; 0 = off. ValueError if not a number."""
    text = (environ if environ is not None else os.environ).get(ENV_HZ, "")
    if not text.strip():
        return DEFAULT_HZ
    hz = float(text)
    if not 0 <= hz <= MAX_HZ:
        raise ValueError("%s=%s: expected 0 (off) to %g" % (ENV_HZ, text, MAX_HZ))
    return hz


class WindowFlag:
    """One shared byte: 1 while a window is open. Forked children share it."""

    def __init__(self):
        import mmap

        self.map = mmap.mmap(-1, 1)  # anonymous and MAP_SHARED: survives fork, shared with children

    def set(self, is_open):
        self.map[0] = 1 if is_open else 0

    def is_open(self):
        return self.map[0] == 1


class Sampler:
    def __init__(self, run_dir, hz, flag=None):
        self.run_dir = run_dir
        self.hz = hz
        self.flag = flag if flag is not None else WindowFlag()
        self.hostname = os.uname().nodename
        self.stop = False
        self.failed = None  # "ExcType: message" once sampling failed
        self.thread_ident = None
        self._reset(os.getpid())
        # threading first (torch imports it anyway): its own after-fork
        # clean-up must run before ours starts the child's thread, or it
        # would take that thread for one the fork left behind.
        import threading  # noqa: F401

        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _reset(self, pid):
        self.pid = pid
        self.ppid = os.getppid()
        self.lock = _thread.allocate_lock()  # a fresh one: a fork may have copied it held
        self.counts = {}  # (thread ident, ((file, line, function), ...) leaf first) -> samples
        self.threads = {}  # thread ident -> (native id, name)
        self.samples = 0  # sampling rounds
        self.thread_samples = 0  # stacks read
        self.dropped = 0  # thread samples of new stacks past MAX_STACKS
        self.truncated = 0  # thread samples cut at MAX_DEPTH
        self.windows = 0  # windows the sampler thread saw open
        self.windows_marked = 0  # windows the step hook opened in this process
        self.window_ns = 0  # wall time the sampler saw a window open
        self.cpu_ns = 0  # the sampler thread's CPU time while sampling
        self.errors = []
        self.errors_total = 0

    # ---- the sampler thread ------------------------------------------------

    def start(self):
        """Starts the daemon thread."""
        if self.hz <= 0:
            return
        import threading

        t = threading.Thread(target=self._run, name="scalescope-python-sampler", daemon=True)
        t.start()

    def _run(self):
        self.thread_ident = _thread.get_ident()
        period = 1.0 / self.hz
        was_open = False
        opened_at = 0
        last_write = 0.0
        pid = self.pid
        while not self.stop and self.failed is None and pid == os.getpid():
            try:
                is_open = self.flag.is_open()
                now = time.perf_counter_ns()
                if is_open and not was_open:
                    self.windows += 1
                    opened_at = now
                    last_write = time.monotonic()
                if is_open:
                    self.window_ns += now - opened_at
                    opened_at = now
                    cpu = time.thread_time_ns()
                    self.sample()
                    self.cpu_ns += time.thread_time_ns() - cpu
                    if time.monotonic() - last_write >= WRITE_EVERY_S:
                        last_write = time.monotonic()
                        self.write()
                elif was_open:
                    self.write()  # the window closed
                was_open = is_open
            except Exception as e:
                self.fail("sampling", e)
                self.write()
                return
            time.sleep(period if is_open else max(period, CLOSED_POLL_S))

    def sample(self):
        frames = sys._current_frames()
        me = self.thread_ident
        counts = self.counts
        with self.lock:
            self.samples += 1
            for ident, frame in frames.items():
                if ident == me:
                    continue
                stack = []
                f = frame
                while f is not None and len(stack) < MAX_DEPTH:
                    code = f.f_code
                    stack.append((code.co_filename, f.f_lineno or 0, code.co_name))  # None at times
                    f = f.f_back
                self.thread_samples += 1
                if f is not None:
                    self.truncated += 1
                key = (ident, tuple(stack))
                n = counts.get(key)
                if n is not None:
                    counts[key] = n + 1
                elif len(counts) < MAX_STACKS:
                    counts[key] = 1
                    if ident not in self.threads:
                        self.threads[ident] = _thread_names().get(ident, (0, ""))
                else:
                    self.dropped += 1

    def fail(self, where, exc):
        self.error(where, exc)
        if self.failed is None:
            self.failed = "%s: %s" % (type(exc).__name__, exc)

    def error(self, where, exc):
        with self.lock:
            self.errors_total += 1
            if len(self.errors) < MAX_ERRORS:
                self.errors.append("%s: %s: %s" % (where, type(exc).__name__, exc))

    # ---- the job's side ----------------------------------------------------

    def window(self, is_open):
        """Called by the step hook when a window opens or closes."""
        self.flag.set(is_open)
        if is_open:
            self.windows_marked += 1

    def _forked(self):
        # A DataLoader worker: its own counts and file, its own thread. The
        # parent's thread did not survive the fork.
        try:
            self._reset(os.getpid())
            self.failed = None
            self._final_write_after_multiprocessing()
            self.start()
        except Exception as e:
            self.fail("fork", e)

    def _final_write_after_multiprocessing(self):
        # multiprocessing's children (DataLoader workers) leave through
        # os._exit, which skips atexit; its own exit finalizers do run. Its
        # registry is cleared after fork, then its after-fork callbacks run:
        # the finalizer is put in from one of those.
        util = sys.modules.get("multiprocessing.util")
        if util is None:
            return
        util.register_after_fork(self, lambda s: util.Finalize(s, s.at_exit, exitpriority=0))

    def at_exit(self):
        if os.getpid() != self.pid:
            return
        self.stop = True
        # A process whose windows were too short for the thread to see still
        # leaves its file: analyze then knows it was sampled, with 0 samples.
        if self.samples or self.errors_total or self.windows_marked:
            self.write()

    # ---- the file -----------------------------------------------------------

    def snapshot(self):
        with self.lock:
            names = _thread_names()
            main = _main_ident()
            threads = {}
            for ident, (native, name) in self.threads.items():
                native, name = names.get(ident, (native, name))
                threads[ident] = {"id": native, "name": name, "main": ident == main}
            stacks = [
                {"thread": threads[ident]["id"] if ident in threads else 0, "samples": n,
                 "frames": [list(fr) for fr in stack]}
                for (ident, stack), n in self.counts.items()
            ]
            window_s = self.window_ns / 1e9
            return {
                "kind": KIND,
                "format": 1,
                "pid": self.pid,
                "ppid": self.ppid,
                "hostname": self.hostname,
                "hz": self.hz,
                "state": "on in windows" if self.failed is None else "failed: " + self.failed,
                "windows": self.windows,
                "window_seconds": round(window_s, 6),
                "samples": self.samples,
                "thread_samples": self.thread_samples,
                "dropped": self.dropped,
                "truncated": self.truncated,
                "max_stacks": MAX_STACKS,
                "max_depth": MAX_DEPTH,
                "sampler_cpu_ns": self.cpu_ns,
                "sampler_cpu_per_second": round(self.cpu_ns / 1e9 / window_s, 6) if window_s > 0 else 0,
                "threads": sorted(threads.values(), key=lambda t: (not t["main"], t["id"])),
                "stacks": sorted(stacks, key=lambda s: -s["samples"]),
                "errors": list(self.errors),
                "errors_total": self.errors_total,
            }

    def path(self):
        return os.path.join(self.run_dir, "%s%s-%d.json" % (FILE_PREFIX, self.hostname, self.pid))

    def write(self):
        if not self.run_dir or os.getpid() != self.pid:
            return
        try:
            import json

            from ._record import write_atomically

            write_atomically(self.path(), json.dumps(self.snapshot(), separators=(",", ":")))
        except Exception:
            pass  # a full disk or a removed run directory: the job goes on


def _thread_names():
    """thread ident -> (native id, name) of the threads threading knows."""
    threading = sys.modules.get("threading")
    if threading is None:
        return {}
    out = {}
    for t in list(getattr(threading, "_active", {}).values()):
        out[t.ident] = (getattr(t, "native_id", None) or 0, t.name)
    return out


def _main_ident():
    threading = sys.modules.get("threading")
    return threading.main_thread().ident if threading is not None else None


def install(record):
    """Called when torch is hooked; returns the sampler or None."""
    try:
        hz = rate_from_env()
    except ValueError as e:
        record.error("python stacks", e)
        record.hook("python_stacks", "failed: ValueError")
        return None
    if hz <= 0:
        record.hook("python_stacks", "off")
        return None
    try:
        sampler = Sampler(record.run_dir, hz)
        sampler.start()
        import atexit

        atexit.register(sampler.at_exit)
        record.hook("python_stacks", "on in windows")
        return sampler
    except Exception as e:
        record.error("python stacks", e)
        record.hook("python_stacks", "failed: %s" % type(e).__name__)
        return None
