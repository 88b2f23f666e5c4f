"""Tests of the Python bootstrap (collect/python/) without PyTorch or a GPU.

Each case runs a fresh interpreter, as `scalescope profile` would start the
job: PYTHONPATH holds the bootstrap first, then the fake torch
(fake_torch/torch) and whatever the case adds; SCALESCOPE_RUN_DIR is a
temporary folder where the bootstrap writes python-<host>-<pid>.json.

The end-to-end case (a plain script under `scalescope profile` over the
fake CUPTI) runs when SCALESCOPE_BIN, SCALESCOPE_COLLECTOR and
SCALESCOPE_FAKE_CUPTI_DIR are set (ctest sets them).

Run: python3 -m unittest discover -s collect/python/tests
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BOOT = os.path.dirname(HERE)
FAKE_TORCH = os.path.join(HERE, "fake_torch")


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCALESCOPE_", "FAKE_TORCH_", "PYTHON"))}
    env.pop("CUDA_INJECTION64_PATH", None)
    env.pop("NVTX_INJECTION64_PATH", None)
    return env


class Job:
    """One interpreter run: its output, exit status and the bootstrap's records."""

    def __init__(self, proc, run_dir):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.records = []  # python-<host>-<pid>.json
        self.stacks = []  # python-stacks-<host>-<pid>.json
        for path in sorted(glob.glob(os.path.join(run_dir, "python-*.json"))):
            with open(path) as f:
                got = json.load(f)
            (self.stacks if os.path.basename(path).startswith("python-stacks-") else self.records).append(got)

    @property
    def record(self):
        assert len(self.records) == 1, self.records
        return self.records[0]


class BootstrapCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="scalescope-bootstrap-")
        self.run_dir = os.path.join(self.dir, "run.ssrun")
        os.mkdir(self.run_dir)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_python(self, code, bootstrap=True, torch=True, extra_path=(), flags=(), env=None, args=()):
        e = clean_env()
        path = ([BOOT] if bootstrap else []) + ([FAKE_TORCH] if torch else []) + list(extra_path)
        if path:
            e["PYTHONPATH"] = os.pathsep.join(path)
        e["SCALESCOPE_RUN_DIR"] = self.run_dir
        e["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in the source tree
        e.update(env or {})
        argv = [sys.executable, *flags]
        argv += ["-c", textwrap.dedent(code)] if code is not None else []
        argv += list(args)
        proc = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=120, cwd=self.dir)
        job = Job(proc, self.run_dir)
        for path in glob.glob(os.path.join(self.run_dir, "python-*.json")):
            os.remove(path)
        return job


# A stand-in for the collector's scalescope_step_mark: a window is open for
# the steps after the marks listed in WINDOW_AFTER (mark k ends step k).
STUB_COLLECTOR = """
import os, torch
from scalescope_bootstrap import _hooks
window_after = {int(s) for s in os.environ.get("WINDOW_AFTER", "").split(",") if s}
marks = []
def stub(step):
    marks.append(step)
    if os.environ.get("MARK_RAISES") == str(step):
        raise OSError("stub collector failed")
    return 1 if step in window_after else 0
_hooks.Collector.mark = lambda self, step: stub(step)
"""

NET = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(), torch.nn.Linear())
        self.head = torch.nn.Linear()
    def forward(self, x):
        return self.head(self.encoder(x))
"""


class WithoutTorch(BootstrapCase):
    def test_job_without_torch_runs_as_before_and_the_record_says_so(self):
        code = "import sys; print('hello', sys.argv[1:]); sys.exit(3)"
        plain = self.run_python(code, bootstrap=False, torch=False, args=["a"])
        booted = self.run_python(code, torch=False, args=["a"])
        self.assertEqual((booted.rc, booted.out, booted.err), (plain.rc, plain.out, plain.err))
        self.assertEqual(booted.rc, 3)
        import importlib.util

        installed = importlib.util.find_spec("torch") is not None
        self.assertEqual(booted.record["torch"], "not imported" if installed else "not installed")
        self.assertEqual(booted.record["steps_marked"], 0)

    def test_failing_torch_import_reaches_the_job_unchanged(self):
        code = """
        try:
            import torch
        except ImportError as e:
            print("job saw:", e)
        import sys
        print("torch" in sys.modules)
        """
        env = {"FAKE_TORCH_IMPORT_ERROR": "1"}
        plain = self.run_python(code, bootstrap=False, env=env)
        booted = self.run_python(code, env=env)
        self.assertEqual((booted.rc, booted.out, booted.err), (plain.rc, plain.out, plain.err))
        self.assertIn("job saw: fake torch: broken on purpose", booted.out)
        self.assertTrue(booted.record["torch"].startswith("import failed: ImportError"), booted.record)

    def test_isolated_and_no_site_interpreters_skip_the_bootstrap(self):
        code = "import sys; print(sorted(m for m in sys.modules if 'scalescope' in m or m == 'sitecustomize'))"
        for flag in ("-I", "-S"):
            plain = self.run_python(code, bootstrap=False, flags=[flag])
            booted = self.run_python(code, flags=[flag])
            self.assertEqual((booted.rc, booted.out, booted.err), (plain.rc, plain.out, plain.err), flag)
            self.assertEqual(booted.records, [], flag)

    def test_outside_a_profiled_run_nothing_happens(self):
        code = "import sys, torch; print('scalescope_bootstrap._hooks' in sys.modules)"
        e = clean_env()
        e["PYTHONPATH"] = os.pathsep.join([BOOT, FAKE_TORCH])
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        proc = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.stdout.strip(), "False", proc.stderr)


class ChainLoading(BootstrapCase):
    def user_site(self, body):
        d = os.path.join(self.dir, "user_site")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "sitecustomize.py"), "w") as f:
            f.write(textwrap.dedent(body))
        return d

    def test_the_jobs_own_sitecustomize_runs_and_stays_importable(self):
        user = self.user_site("""
        import os
        MARK = "user-site"
        print("user sitecustomize ran")
        """)
        code = """
        import sys, sitecustomize, torch
        print(sitecustomize.MARK, sys.path.index(%r) >= 0)
        """ % user
        plain = self.run_python(code, bootstrap=False, extra_path=[user])
        booted = self.run_python(code, extra_path=[user])
        self.assertEqual((booted.rc, booted.out, booted.err), (plain.rc, plain.out, plain.err))
        self.assertIn("user sitecustomize ran\nuser-site True", booted.out)
        self.assertEqual(booted.record["hooks"]["optimizer_steps"], "on")  # and the bootstrap ran too

    def test_an_error_in_the_jobs_sitecustomize_looks_the_same(self):
        user = self.user_site("""
        print("user sitecustomize starts")
        raise ValueError("boom in the job's sitecustomize")
        """)
        code = "import sys; print('job runs', 'sitecustomize' in sys.modules)"
        plain = self.run_python(code, bootstrap=False, extra_path=[user])
        booted = self.run_python(code, extra_path=[user])
        self.assertEqual((booted.rc, booted.out, booted.err), (plain.rc, plain.out, plain.err))
        self.assertIn("boom in the job's sitecustomize", booted.err)
        self.assertIn("job runs False", booted.out)

    def test_torch_keeps_its_own_loader(self):
        code = "import torch\nprint(type(torch.__loader__).__name__, type(torch.__spec__.loader).__name__)\n"
        plain = self.run_python(code, bootstrap=False)
        booted = self.run_python(code)
        self.assertEqual((booted.rc, booted.out, booted.err), (plain.rc, plain.out, plain.err))
        self.assertEqual(booted.record["hooks"]["optimizer_steps"], "on")

    def test_the_jobs_sitecustomize_importing_torch_is_hooked(self):
        user = self.user_site("import torch\n")
        code = "import torch\nopt = torch.optim.SGD([])\nfor _ in range(3): opt.step()\n"
        booted = self.run_python(code, extra_path=[user])
        self.assertEqual(booted.rc, 0, booted.err)
        self.assertEqual(booted.record["steps_marked"], 3)


class StepMarks(BootstrapCase):
    def test_every_optimizer_step_is_marked(self):
        code = "import torch\nopt = torch.optim.SGD([])\nfor _ in range(7): opt.step()\nprint('done')\n"
        job = self.run_python(code)
        self.assertEqual((job.rc, job.out), (0, "done\n"), job.err)
        r = job.record
        self.assertEqual(r["steps_marked"], 7)
        self.assertEqual(r["hooks"]["optimizer_steps"], "on")
        self.assertEqual(r["collector"], "not loaded")
        self.assertTrue(r["torch"].startswith("2.99.0"))
        self.assertEqual(r["errors"], [])

    def test_only_the_first_optimizer_marks_until_it_is_gone(self):
        code = """
        import gc, torch
        g, d = torch.optim.SGD([]), torch.optim.SGD([])
        for _ in range(4):
            d.step(); g.step()   # two optimizers per step, as a GAN
        del d; gc.collect()
        for _ in range(3):
            g.step()
        """
        job = self.run_python(code)
        self.assertEqual(job.rc, 0, job.err)
        self.assertEqual(job.record["steps_marked"], 4 + 3)

    def test_torch_without_the_global_step_hook(self):
        code = "import torch\nopt = torch.optim.SGD([])\nopt.step()\nprint('ok')\n"
        job = self.run_python(code, env={"FAKE_TORCH_NO_STEP_HOOK": "1"})
        self.assertEqual((job.rc, job.out), (0, "ok\n"), job.err)
        self.assertTrue(job.record["hooks"]["optimizer_steps"].startswith("missing:"), job.record)
        self.assertEqual(job.record["steps_marked"], 0)

    def test_a_failing_collector_call_turns_the_hook_off_not_the_job(self):
        code = STUB_COLLECTOR + "opt = torch.optim.SGD([])\nfor _ in range(6): opt.step()\nprint('steps', opt.steps)\n"
        job = self.run_python(code, env={"MARK_RAISES": "2"})
        self.assertEqual((job.rc, job.out, job.err), (0, "steps 6\n", ""))
        self.assertEqual(job.record["hooks"]["optimizer_steps"], "failed: OSError")
        self.assertEqual(job.record["steps_marked"], 1)
        self.assertIn("stub collector failed", job.record["errors"][0])

    def test_forked_children_mark_and_write_nothing(self):
        code = """
        import os, sys, torch
        opt = torch.optim.SGD([])
        opt.step()
        pid = os.fork()
        if pid == 0:
            opt.step()   # a worker never steps; if it did, nothing would be marked
            sys.exit(0)  # atexit runs in the child
        os.waitpid(pid, 0)
        opt.step()
        """
        job = self.run_python(code)
        self.assertEqual(job.rc, 0, job.err)
        self.assertEqual(len(job.records), 1)
        self.assertEqual(job.record["steps_marked"], 2)

    def test_the_collector_is_looked_up_never_loaded(self):
        code = """
        import torch, sys
        from scalescope_bootstrap import _hooks
        c = _hooks.Collector(None, path="/nonexistent/libscalescope-collector.so")
        answers = [c.mark(s) for s in range(1, 200)]
        print(set(answers), c.misses)
        """
        job = self.run_python(code)
        self.assertEqual(job.rc, 0, job.err)
        answers, misses = job.out.split(" ")
        self.assertEqual(answers, "{-1}")
        # Looked up less and less often: 199 marks, a handful of look-ups.
        self.assertLess(int(misses), 12)
        self.assertGreater(int(misses), 3)


class WindowRanges(BootstrapCase):
    def test_operator_and_module_ranges_only_inside_windows(self):
        code = STUB_COLLECTOR + NET + textwrap.dedent("""
        from torch.cuda import nvtx
        model, opt = Net(), torch.optim.SGD([])
        per_step = []
        for step in range(1, 7):
            before = len(nvtx.events)
            model(step); torch.autograd.backward(); opt.step()
            per_step.append([m for kind, m in nvtx.events[before:] if kind == "push"])
        import json
        print(json.dumps({"per_step": per_step, "profiler": torch.autograd.profiler.events,
                          "pushes": sum(k == "push" for k, _ in nvtx.events),
                          "pops": sum(k == "pop" for k, _ in nvtx.events)}))
        """)
        job = self.run_python(code, env={"WINDOW_AFTER": "2,3"})  # steps 3 and 4 traced
        self.assertEqual(job.rc, 0, job.err)
        # Switched outside the optimizer's record_function range: torch's
        # NVTX observer has nothing to warn about in the job's output.
        self.assertNotIn("RecordFunction", job.err)
        got = json.loads(job.out)
        steps = got["per_step"]
        for outside in (0, 1, 4, 5):
            self.assertEqual(steps[outside], [], "step %d" % (outside + 1))
        for inside in (2, 3):
            modules = [m for m in steps[inside] if m.startswith("nn.Module: ")]
            self.assertEqual(
                modules,
                ["nn.Module: Net", "nn.Module: encoder", "nn.Module: encoder.0", "nn.Module: encoder.1",
                 "nn.Module: head"])
            ops = [m.split(",")[0] for m in steps[inside] if not m.startswith("nn.Module: ")]
            self.assertEqual(ops, ["aten::linear"] * 3 + ["AddmmBackward0"])
        self.assertEqual(got["profiler"], ["on", "off"])
        self.assertEqual(got["pushes"], got["pops"])
        self.assertEqual(job.record["windows_opened"], 1)
        self.assertEqual(job.record["hooks"]["operator_ranges"], "on in windows")
        self.assertEqual(job.record["hooks"]["module_ranges"], "on in windows")

    def test_failing_ranges_are_turned_off_and_recorded(self):
        code = STUB_COLLECTOR + NET + textwrap.dedent("""
        model, opt = Net(), torch.optim.SGD([])
        for step in range(1, 6):
            model(step); opt.step()
        print("trained")
        """)
        for env, hook in (({"FAKE_TORCH_NVTX_FAILS": "1"}, "module_ranges"),
                          ({"FAKE_TORCH_NVTX_PROFILER_BUSY": "1"}, "operator_ranges")):
            env = dict(env, WINDOW_AFTER="1,2,3")
            job = self.run_python(code, env=env)
            self.assertEqual((job.rc, job.out, job.err), (0, "trained\n", ""), env)
            self.assertEqual(job.record["hooks"][hook], "failed: RuntimeError", job.record)
            self.assertEqual(job.record["hooks"]["optimizer_steps"], "on")
            self.assertEqual(job.record["steps_marked"], 5)
            self.assertGreaterEqual(job.record["errors_total"], 1)


class Identity(BootstrapCase):
    def test_rank_and_process_groups_from_torch_distributed(self):
        code = """
        import torch
        import torch.distributed as dist
        dist.init_process_group(backend="nccl", rank=1, world_size=4)
        dist.new_group([0, 1], group_desc="data_parallel")
        dist.new_group([1, 3], backend="gloo")
        opt = torch.optim.SGD([])
        opt.step()
        """
        job = self.run_python(code, env={"LOCAL_RANK": "1"})
        self.assertEqual(job.rc, 0, job.err)
        d = job.record["distributed"]
        self.assertEqual((d["rank"], d["world_size"], d["local_rank"], d["backend"]), (1, 4, 1, "nccl"))
        groups = {g["name"]: g for g in d["process_groups"]}
        self.assertEqual(groups["0"]["ranks"], [0, 1, 2, 3])
        self.assertEqual(groups["0"]["description"], "default_pg")
        self.assertEqual(groups["1"], {"name": "1", "ranks": [0, 1], "description": "data_parallel",
                                       "backend": "nccl"})
        self.assertEqual(groups["2"]["backend"], "gloo")

    def test_without_torch_distributed_no_identity(self):
        job = self.run_python("import torch\ntorch.optim.SGD([]).step()\n")
        self.assertNotIn("distributed", job.record)


# A DataLoader-like job: the window opens at the first step mark, a worker
# forked as DataLoader forks them reads items of a dataset whose one hot line
# is known, the parent waits for it, then the window closes.
TOY_DATASET = """
import time


class ToyDataset:
    def __getitem__(self, i):
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end: pass  # the hot line: 8
        return i
"""

FORKED_WORKER = STUB_COLLECTOR + """
import multiprocessing, time
from toy_dataset import ToyDataset

def worker_loop(seconds):
    data, end = ToyDataset(), time.monotonic() + seconds
    while time.monotonic() < end:
        data[0]

opt = torch.optim.SGD([])
opt.step()  # the window opens
worker = multiprocessing.get_context("fork").Process(target=worker_loop, args=(1.5,))
worker.start()
worker.join()
opt.step(); opt.step()  # the window closes
print("worker", worker.pid, "exit", worker.exitcode)
"""


class PythonStacks(BootstrapCase):
    def dataset_path(self):
        with open(os.path.join(self.dir, "toy_dataset.py"), "w") as f:
            f.write(TOY_DATASET)
        return [self.dir]

    def test_a_forked_worker_names_its_hot_line(self):
        job = self.run_python(FORKED_WORKER, extra_path=self.dataset_path(), env={"WINDOW_AFTER": "1"})
        self.assertEqual(job.rc, 0, job.err)
        self.assertEqual(job.err, "")
        parent = job.record
        self.assertEqual(parent["hooks"]["python_stacks"], "on in windows")
        worker_pid = int(job.out.split()[1])
        by_pid = {s["pid"]: s for s in job.stacks}
        self.assertIn(worker_pid, by_pid, job.stacks)
        worker = by_pid[worker_pid]
        self.assertEqual(worker["kind"], "scalescope python stacks")
        self.assertEqual(worker["ppid"], parent["pid"])
        self.assertEqual(worker["hz"], 100.0)
        self.assertEqual(worker["state"], "on in windows")
        self.assertEqual(worker["errors"], [])
        self.assertGreaterEqual(worker["samples"], 5, worker)
        self.assertGreater(worker["sampler_cpu_ns"], 0)
        self.assertGreater(worker["window_seconds"], 0.5)
        main = [t for t in worker["threads"] if t["main"]]
        self.assertEqual(len(main), 1, worker["threads"])
        self.assertEqual(main[0]["id"], worker_pid)  # a forked process's main thread: its pid
        leaves = {}
        for st in worker["stacks"]:
            f, line, fn = st["frames"][0]
            key = "%s:%d %s" % (os.path.basename(f), line, fn)
            leaves[key] = leaves.get(key, 0) + st["samples"]
        hottest = max(leaves, key=leaves.get)
        self.assertEqual(hottest, "toy_dataset.py:8 __getitem__", leaves)
        self.assertGreater(leaves[hottest] / sum(leaves.values()), 0.5, leaves)
        callers = [fr[2] for fr in worker["stacks"][0]["frames"]]
        self.assertIn("worker_loop", callers)
        # The parent sampled its own main thread, waiting for the worker.
        self.assertIn(parent["pid"], by_pid)
        self.assertEqual(by_pid[parent["pid"]]["ppid"], os.getpid())

    def test_no_window_no_samples(self):
        job = self.run_python(FORKED_WORKER, extra_path=self.dataset_path(), env={"WINDOW_AFTER": ""})
        self.assertEqual((job.rc, job.err), (0, ""))
        self.assertEqual(job.record["hooks"]["python_stacks"], "on in windows")
        self.assertEqual(job.stacks, [])

    def test_a_window_too_short_to_sample_still_leaves_the_file(self):
        code = STUB_COLLECTOR + textwrap.dedent("""
        opt = torch.optim.SGD([])
        for _ in range(3): opt.step()  # a window of one short step
        """)
        job = self.run_python(code, env={"WINDOW_AFTER": "1", "SCALESCOPE_PYTHON_SAMPLING_HZ": "0.5"})
        self.assertEqual((job.rc, job.err), (0, ""))
        self.assertEqual(len(job.stacks), 1, job.stacks)
        self.assertEqual((job.stacks[0]["samples"], job.stacks[0]["hz"]), (0, 0.5))

    def test_off_at_rate_zero_and_a_bad_rate_is_recorded(self):
        code = STUB_COLLECTOR + textwrap.dedent("""
        import threading
        opt = torch.optim.SGD([])
        for _ in range(3): opt.step()
        print(sorted(t.name for t in threading.enumerate()))
        """)
        off = self.run_python(code, env={"WINDOW_AFTER": "1,2", "SCALESCOPE_PYTHON_SAMPLING_HZ": "0"})
        self.assertEqual((off.rc, off.out, off.err), (0, "['MainThread']\n", ""))
        self.assertEqual(off.record["hooks"]["python_stacks"], "off")
        self.assertEqual(off.stacks, [])
        bad = self.run_python(code, env={"WINDOW_AFTER": "1,2", "SCALESCOPE_PYTHON_SAMPLING_HZ": "fast"})
        self.assertEqual((bad.rc, bad.out, bad.err), (0, "['MainThread']\n", ""))
        self.assertEqual(bad.record["hooks"]["python_stacks"], "failed: ValueError")
        self.assertEqual(bad.record["steps_marked"], 3)

    def test_an_error_while_sampling_turns_it_off_and_is_recorded(self):
        code = STUB_COLLECTOR + textwrap.dedent("""
        import sys, time
        def broken():
            raise RuntimeError("frames unavailable")
        opt = torch.optim.SGD([])
        opt.step()  # the window opens
        time.sleep(0.2)
        sys._current_frames = broken
        time.sleep(0.3)
        opt.step(); opt.step()
        print("trained")
        """)
        job = self.run_python(code, env={"WINDOW_AFTER": "1,2"})
        self.assertEqual((job.rc, job.out, job.err), (0, "trained\n", ""))
        self.assertEqual(len(job.stacks), 1, job.stacks)
        st = job.stacks[0]
        self.assertEqual(st["state"], "failed: RuntimeError: frames unavailable")
        self.assertEqual(st["errors"], ["sampling: RuntimeError: frames unavailable"])
        self.assertGreater(st["samples"], 0)  # what was taken before stays

    def test_memory_is_bounded(self):
        code = STUB_COLLECTOR + textwrap.dedent("""
        import time
        from scalescope_bootstrap import _pystacks
        _pystacks.MAX_STACKS, _pystacks.MAX_DEPTH = 6, 8
        def down(n, leaf):
            return down(n - 1, leaf) if n else leaf(time.perf_counter() + 0.03)
        # 40 leaf functions, each in a file of its own: 40 distinct stacks, 20 frames deep.
        leaves = [eval(compile("lambda end: [0 for _ in iter(lambda: time.perf_counter() < end, False)]",
                               "leaf%d.py" % k, "eval")) for k in range(40)]
        opt = torch.optim.SGD([])
        opt.step()
        for leaf in leaves:
            down(20, leaf)
        opt.step(); opt.step()
        """)
        job = self.run_python(code, env={"WINDOW_AFTER": "1"})
        self.assertEqual((job.rc, job.err), (0, ""))
        st = job.stacks[0]
        self.assertLessEqual(len(st["stacks"]), 6)
        self.assertTrue(all(len(s["frames"]) <= 8 for s in st["stacks"]), st["stacks"])
        self.assertGreater(st["dropped"], 0, st)
        self.assertGreater(st["truncated"], 0, st)
        self.assertEqual(sum(s["samples"] for s in st["stacks"]) + st["dropped"], st["thread_samples"])


class StepMarkCost(BootstrapCase):
    def test_cost_of_a_step_mark_outside_windows(self):
        """The hook's own time per step, with a collector answering 0 at once
        (the ctypes call and the collector's bookkeeping come on top: about
        a microsecond each, measured by the GPU check). Printed, and bounded
        loosely so that a loaded machine does not fail it."""
        code = STUB_COLLECTOR + textwrap.dedent("""
        import time
        opt = torch.optim.SGD([])
        n = 20000
        def run():
            t = time.perf_counter_ns()
            for _ in range(n): opt.step()
            return (time.perf_counter_ns() - t) / n
        from torch.optim import optimizer
        hooks = dict(optimizer._global_optimizer_post_hooks)
        with_hook = min(run() for _ in range(3))
        optimizer._global_optimizer_post_hooks.clear()
        without = min(run() for _ in range(3))
        print("%.0f" % (with_hook - without))
        """)
        job = self.run_python(code)
        self.assertEqual(job.rc, 0, job.err)
        ns = float(job.out)
        sys.stderr.write("\nstep mark hook: %.0f ns per step (Python side, stub collector)\n" % ns)
        self.assertLess(ns, 50000)


@unittest.skipUnless(
    all(os.environ.get(k) for k in ("SCALESCOPE_BIN", "SCALESCOPE_COLLECTOR", "SCALESCOPE_FAKE_CUPTI_DIR")),
    "needs SCALESCOPE_BIN, SCALESCOPE_COLLECTOR and SCALESCOPE_FAKE_CUPTI_DIR (set by ctest)")
@unittest.skipIf(
    os.environ.get("SCALESCOPE_TEST_SANITIZED") == "1",
    "the collector is built with AddressSanitizer, whose runtime must be loaded first, and the Python it is "
    "injected into is not; the release build runs these cases")
class UnderProfile(BootstrapCase):
    STEPS = 60

    # The loop stays HOLD seconds after its last step: the outside Python
    # sampler looks for new processes five times a second, and on a loaded
    # machine (CI runs tests side by side) finding one took over 1.5 s.
    def profile(self, *extra, hold="3"):
        e = clean_env()
        e["PYTHONPATH"] = FAKE_TORCH  # the job's own path: the bootstrap goes before it
        e["LD_LIBRARY_PATH"] = os.environ["SCALESCOPE_FAKE_CUPTI_DIR"]
        e["SCALESCOPE_COLLECTOR"] = os.environ["SCALESCOPE_COLLECTOR"]
        e["SCALESCOPE_NVML_HZ"] = "0"
        e["FAKE_TORCH_CUPTI"] = "1"
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        run = os.path.join(self.dir, "plain")
        argv = [os.environ["SCALESCOPE_BIN"], "profile", "-o", run, *extra, "--",
                sys.executable, os.path.join(HERE, "train_loop.py"), str(self.STEPS), hold]
        proc = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=300, cwd=self.dir)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("trained %d steps" % self.STEPS, proc.stdout)
        with open(os.path.join(run + ".ssrun", "run.json")) as f:
            return run + ".ssrun", json.load(f), proc.stderr

    def analyze(self, run_dir):
        proc = subprocess.run([os.environ["SCALESCOPE_BIN"], "analyze", run_dir, "--json"],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)["analysis"]

    def test_plain_script_gets_sampled_windows_from_its_optimizer_steps(self):
        run_dir, run, log = self.profile()
        traced = [p for p in run["processes"] if p.get("trace_file")]
        self.assertEqual(len(traced), 1, run)
        sampling = traced[0]["sampling"]
        self.assertEqual(sampling["iteration_marker"], "optimizer steps")
        self.assertEqual(sampling["iterations_seen"], self.STEPS)
        self.assertEqual(sampling["iterations_inside"], 20)
        self.assertIn("20 of %d iterations traced in sampled windows" % self.STEPS, log)
        python = run["python"]
        self.assertEqual(len(python), 1, python)
        self.assertEqual(python[0]["steps_marked"], self.STEPS)
        self.assertEqual(python[0]["collector"], "loaded")
        self.assertEqual(python[0]["windows_opened"], 1)
        self.assertEqual(traced[0]["python"]["pid"], traced[0]["pid"])

        a = self.analyze(run_dir)
        ranks = [r for r in a["ranks"] if r["iterations"]["availability"]["available"]]
        self.assertEqual(len(ranks), 1, a["ranks"])
        it = ranks[0]["iterations"]
        # The window's 20 steps, found from the module ranges that repeat
        # once per step (the window is all that has them).
        self.assertEqual(it["count"], 20, it)
        att = ranks[0]["attribution"]
        ops = {o["name"] for o in att["operators"]}
        self.assertIn("aten::linear", ops)
        self.assertIn("AddmmBackward0", ops)
        modules = {r["name"] for r in att["ranges"] if r["kind"] == "module"}
        for name in ("nn.Module: Net", "nn.Module: encoder", "nn.Module: encoder.0", "nn.Module: head"):
            self.assertIn(name, modules)

        # Python stacks, sampled inside the window: the rank's own file, read
        # back by analyze for that rank.
        self.assertEqual(run["python_sampling_hz"], 100)
        stacks = glob.glob(os.path.join(run_dir, "python-stacks-*-%d.json" % traced[0]["pid"]))
        self.assertEqual(len(stacks), 1, (os.listdir(run_dir), run.get("python_stacks_notes")))
        frames = ranks[0]["python_frames"]
        self.assertEqual((frames["processes"], frames["worker_processes"], frames["hz"]), (1, 0, 100))
        self.assertEqual(frames["problems"], [])
        if frames["samples"] > 0:  # a window of about 20 short steps: a few samples on a loaded machine
            main = frames["threads"][0]
            self.assertTrue(main["is_main"], frames)
            self.assertTrue(any("train_loop.py" in f["callers"] for f in main["top"]), main)

    def test_a_stalled_job_dumps_the_line_its_python_waits_on(self):
        # After its last step the loop sleeps 4 s in main(): with --hang-after
        # 1s the collector finds the job stalled and writes its hang dump,
        # with the main thread's Python stack read as from outside.
        run_dir, run, log = self.profile("--hang-after", "1s", hold="4")
        dumps = glob.glob(os.path.join(run_dir, "control", "hang", "*.json"))
        self.assertEqual(len(dumps), 1, os.listdir(run_dir))
        with open(dumps[0]) as f:
            d = json.load(f)
        self.assertEqual(d["reason"], "hang-after")
        self.assertNotIn("python_note", d)
        main = [t for t in d["python"] if t["tid"] == d["pid"]]
        self.assertEqual(len(main), 1, d["python"])
        leaf = main[0]["frames"][0]
        self.assertEqual((os.path.basename(leaf["file"]), leaf["function"]), ("train_loop.py", "main"), main)
        self.assertEqual(main[0]["frames"][-1]["function"], "<module>")
        hang = self.analyze(run_dir)["hang"]
        self.assertRegex(hang["processes"][0]["python"], r"^train_loop\.py:\d+ main < train_loop\.py:\d+ <module>$")
        self.assertIn("(Python: train_loop.py:", hang["text"])

    def test_no_python_leaves_the_job_alone(self):
        run_dir, run, log = self.profile("--no-python")
        self.assertEqual(run.get("python", []), [])
        traced = [p for p in run["processes"] if p.get("trace_file")]
        self.assertEqual(traced[0]["sampling"]["iterations_seen"], 0)
        self.assertIn("Python bootstrap off", log)


if __name__ == "__main__":
    unittest.main()
