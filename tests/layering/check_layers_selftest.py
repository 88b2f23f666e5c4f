#!/usr/bin/env python3
"""The layering check's own test: on a tree with every part of its order, it
must pass; with one upward #include planted, or one upward CMake link, it must
fail and name that file and line. The tree is made from the check's own part
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
        links = " ".join(f"scalescope_{a}" for a in sorted(allowed))
        (folder / "CMakeLists.txt").write_text(
            f"add_library(scalescope_{part} ok.cpp)\n"
            f"target_link_libraries(scalescope_{part} PUBLIC {links})  # scalescope_cli in a comment is fine\n"
            f"scalescope_add_test({part}_test SOURCES ok.cpp LIBS scalescope_{part})\n")


def run(root: pathlib.Path) -> tuple[int, str]:
    r = subprocess.run([sys.executable, str(HERE / "check_layers.py"), str(root)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main() -> int:
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp)
        clean = base / "clean"
        make_tree(clean)
        rc, out = run(clean)
        if rc != 0:
            failures.append(f"a tree that keeps the order failed the check:\n{out}")

        include = base / "include"
        make_tree(include)
        (include / "analyze" / "upward.cpp").write_text('#include "trace/x.hpp"\n#include "advise/advise.hpp"\n')
        rc, out = run(include)
        if rc == 0 or "analyze/upward.cpp:2: analyze/ includes" not in out:
            failures.append(f"an upward #include was not reported (exit {rc}):\n{out}")

        link = base / "link"
        make_tree(link)
        with open(link / "trace" / "CMakeLists.txt", "a") as f:
            f.write("target_link_libraries(scalescope_trace PRIVATE scalescope_report_html)\n")
        rc, out = run(link)
        if rc == 0 or "trace/CMakeLists.txt:4: trace/ links scalescope_report_html" not in out:
            failures.append(f"an upward CMake link was not reported (exit {rc}):\n{out}")
    for f in failures:
        print("FAIL", f)
    print(f"check_layers self-test: {3 - len(failures)} of 3 cases right")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
