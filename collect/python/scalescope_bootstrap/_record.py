"""What the bootstrap saw in this process: <run dir>/python-<host>-<pid>.json.

Written when torch has been imported and hooked, when the process group
is set up, and at exit (atexit); each write replaces the file whole
(write to a temporary name, then rename), so a killed process leaves the
last complete one. A forked child (a DataLoader worker) writes nothing:
its parent's record stands for it.
"""

import os
import sys
import _thread

MAX_ERRORS = 20


class Record:
    def __init__(self):
        self.pid = os.getpid()
        self.lock = _thread.allocate_lock()  # not threading: a lighter import at start-up
        self.data = {
            "kind": "scalescope python bootstrap",
            "pid": self.pid,
            "hostname": os.uname().nodename,
            "python": sys.version.split()[0],
            "torch": "not imported",
            "hooks": {},
            "steps_marked": 0,
            "windows_opened": 0,
            "collector": "not loaded",
            "errors": [],
            "errors_total": 0,
        }
        self.run_dir = os.environ.get("SCALESCOPE_RUN_DIR", "")
        self.armed = False
        self.before_exit = []  # callables run at exit, before the last write

    def arm(self):
        """Writes the record at exit from now on."""
        if self.armed:
            return
        self.armed = True
        import atexit

        atexit.register(self.at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self):
        self.run_dir = ""  # a forked worker: the parent's record stands for it

    def set(self, key, value):
        with self.lock:
            self.data[key] = value

    def hook(self, name, state):
        """state: "on", "off", or "missing: why" / "failed: why"."""
        with self.lock:
            self.data["hooks"][name] = state

    def error(self, where, exc):
        with self.lock:
            self.data["errors_total"] += 1
            if len(self.data["errors"]) < MAX_ERRORS:
                self.data["errors"].append("%s: %s: %s" % (where, type(exc).__name__, exc))

    def at_exit(self):
        if os.getpid() != self.pid:
            return
        for fn in self.before_exit:
            try:
                fn()
            except Exception as e:
                self.error("exit", e)
        if self.data["torch"] == "not imported":
            self.data["torch"] = _torch_availability()
        self.write()

    def write(self):
        if not self.run_dir or os.getpid() != self.pid:
            return
        try:
            import json

            with self.lock:
                text = json.dumps(self.data, indent=1, sort_keys=True)
            write_atomically(os.path.join(self.run_dir, "python-%s-%d.json" % (self.data["hostname"], self.pid)), text)
        except Exception:
            pass  # a full disk or a removed run directory: the job goes on


def write_atomically(path, text):
    """Writes text to a temporary name, then renames it: a killed process
    leaves the last complete file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, path)


def _torch_availability():
    """At exit, for a process that never imported torch: installed or not."""
    try:
        import importlib.util

        return "not imported" if importlib.util.find_spec("torch") is not None else "not installed"
    except Exception:
        return "not imported"
