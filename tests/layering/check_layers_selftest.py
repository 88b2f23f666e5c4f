#!/usr/bin/env python3
"""The layering check's own test: on a tree with every part of its order, it
must pass; with one fault planted (an upward #include or CMake link, between
parts or between the libraries of trace/, a header or library of no part, a
source outside every part) it must fail and name that file and line. The tree is made from the check's own part
list, so a new part cannot leave the fixture behind (a stale fixture made the
check stop at "the part is missing" before it looked at the planted include).
Usage: check_layers_selftest.py   (exit 0: the check works)
"""
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import check_layers  # noqa: E402


def make_tree(root: pathlib.Path) -> None:
    for part, allowed in check_layers.ALLOWED.items():
        folder = root / part
        folder.mkdir(parents=True)
        includes = "".join(f'#include "{a}/x.hpp"\n' for a in sorted(allowed))
        (folder / "ok.cpp").write_text(f'#include "{part}/ok.hpp"\n{includes}')
        name = "scalescope_" + part.replace("/", "_")
        links = " ".join("scalescope_" + a.replace("/", "_") for a in sorted(allowed))
        (folder / "CMakeLists.txt").write_text(
            f"add_library({name} ok.cpp)\n"
            f"target_link_libraries({name} PUBLIC {links})  # scalescope_cli in a comment is fine\n"
            f"scalescope_add_test({part.replace('/', '_')}_test SOURCES ok.cpp LIBS {name})\n")


def run(root: pathlib.Path) -> tuple[int, str]:
    r = subprocess.run([sys.executable, str(HERE / "check_layers.py"), str(root)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


# (name, file to write, text appended to it, what the check must print)
PLANTED = [
    ("an upward #include", "analyze/upward.cpp", '#include "trace/model/x.hpp"\n#include "advise/advise.hpp"\n',
     "analyze/upward.cpp:2: analyze/ includes"),
    ("an upward #include inside trace/", "trace/model/upward.cpp", '#include "trace/stats/stats.hpp"\n',
     "trace/model/upward.cpp:1: trace/model/ includes"),
    ("an upward CMake link", "base/CMakeLists.txt", "target_link_libraries(scalescope_base PRIVATE scalescope_report)\n",
     "base/CMakeLists.txt:4: base/ links scalescope_report"),
    ("an upward CMake link inside trace/", "trace/model/CMakeLists.txt",
     "target_link_libraries(scalescope_trace_model PRIVATE scalescope_trace_import)\n",
     "trace/model/CMakeLists.txt:4: trace/model/ links scalescope_trace_import"),
    ("a header of no part", "analyze/old.cpp", '#include "trace/trace.hpp"\n',
     "analyze/old.cpp:1: analyze/ includes '#include \"trace/trace.hpp\"', a header of no part"),
    ("a library of no part", "report/CMakeLists.txt", "target_link_libraries(scalescope_report PRIVATE scalescope_trace)\n",
     "report/CMakeLists.txt:4: report/ links scalescope_trace, a library of no part"),
    ("a source outside every part", "trace/loose.cpp", "int loose;\n", "trace/: C++ sources that the layer order does not place"),
]


def main() -> int:
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp)
        clean = base / "clean"
        make_tree(clean)
        rc, out = run(clean)
        if rc != 0:
            failures.append(f"a tree that keeps the order failed the check:\n{out}")
        for n, (what, rel, text, expected) in enumerate(PLANTED):
            tree = base / f"planted{n}"
            make_tree(tree)
            with open(tree / rel, "a") as f:
                f.write(text)
            rc, out = run(tree)
            if rc == 0 or expected not in out:
                failures.append(f"{what} was not reported (exit {rc}; expected {expected!r}):\n{out}")
    for f in failures:
        print("FAIL", f)
    cases = 1 + len(PLANTED)
    print(f"check_layers self-test: {cases - len(failures)} of {cases} cases right")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
