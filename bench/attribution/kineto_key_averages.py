"""An independent cross-check of scalescope's attribution on a Kineto trace,
done the way torch.profiler's key_averages() counts device time: each kernel,
copy and set goes to the cpu_op whose "External id" it carries (Kineto's own
link, not the correlation id scalescope follows), and from there to every
enclosing cpu_op on that thread (an op's device_time_total includes its
children's). Prints the top operators by that inclusive summed time, as JSON
lines {name, count, device_time_total_ns, self_device_time_total_ns}.
  python3 kineto_key_averages.py TRACE.json[.gz] [TOP]"""
import gzip
import json
import sys
from collections import defaultdict


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        events = json.load(f)["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    by_ext = {}
    for e in ops:
        ext = e.get("args", {}).get("External id")
        if ext is not None:
            by_ext.setdefault(ext, e)
    # Parent of each op: the innermost op of the same thread containing it.
    parent = {}
    for tid in {e["tid"] for e in ops}:
        stack = []
        for e in sorted((e for e in ops if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            parent[id(e)] = stack[-1] if stack else None
            stack.append(e)
    total = defaultdict(float)
    self_time = defaultdict(float)
    count = defaultdict(int)
    for e in ops:
        count[e["name"]] += 1
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        op = by_ext.get(e.get("args", {}).get("External id"))
        if op is None:
            continue
        d = e["dur"] * 1000.0
        self_time[op["name"]] += d
        seen = set()
        while op is not None:
            if op["name"] not in seen:
                seen.add(op["name"])
                total[op["name"]] += d
            op = parent[id(op)]
    for name in sorted(total, key=lambda n: -total[n])[:top]:
        print(json.dumps({"name": name, "count": count[name], "device_time_total_ns": round(total[name]),
                          "self_device_time_total_ns": round(self_time[name])}))


if __name__ == "__main__":
    main()
