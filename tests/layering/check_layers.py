#!/usr/bin/env python3
"""Fails when a part includes a header of, or links a library of, a part above it.

The order is the one docs/architecture.md writes down ("Layers"); each part
may include its own headers and those of the parts listed for it. Tests,
benchmarks and fuzzers beside a part obey the same rule as its code (a test
that needs a higher part lives in that part). Usage: check_layers.py SOURCE_DIR
"""
import pathlib
import re
import sys

# part -> parts it may include (besides itself). Bottom first. A part is a
# folder: "base", or "trace/model" (its headers are "trace/model/x.hpp", its
# CMake library scalescope_trace_model).
TRACE = {"trace/model", "trace/import", "trace/export", "trace/stats"}
ALLOWED = {
    "base": set(),
    "trace/model": {"base"},
    "trace/import": {"trace/model", "base"},
    "trace/export": {"trace/import", "trace/model", "base"},
    "trace/stats": {"trace/import", "trace/model", "base"},
    "collect": {"trace/import", "trace/model", "base"},
    "analyze": TRACE | {"base"},
    "advise": {"analyze", "base"} | TRACE,
    "scaling": {"base"},
    "sweep": {"analyze", "mlperf", "scaling", "base"} | TRACE,
    "mlperf": {"scaling", "base"},
    "report": {"advise", "analyze", "collect", "mlperf", "scaling", "sweep", "base"} | TRACE,
    "demo": {"report", "mlperf", "sweep", "scaling", "base"} | TRACE,
    "cli": {"advise", "analyze", "collect", "demo", "mlperf", "report", "scaling", "sweep", "base"} | TRACE,
    "capi": {"advise", "analyze", "mlperf", "report", "scaling", "sweep", "base"} | TRACE,
}
# Known violations being removed: listed so that no new one can
# join them; the check fails when one of these is gone but still listed.
KNOWN: set[tuple[str, str]] = set()  # none left (mlperf/ stopped building report tables)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+(?:/[a-z_]+)*)/[^"/]+"', re.M)
# A library target of a part: scalescope_<part> or scalescope_<part>_<what>
# (scalescope_collect_host; scalescope_trace_model for
# trace/model). Build helpers share the prefix and name no part (scalescope_add_test).
TARGET = re.compile(r"\bscalescope_([a-z_]+)\b")
# Folders that hold parts without being one (trace/).
CONTAINERS = {part.split("/")[0] for part in ALLOWED if "/" in part}


def part_of_path(path: str) -> str | None:
    """The part a source path (or an include's folder) lies in: the longest
    part folder that holds it."""
    best = None
    for part in ALLOWED:
        if (path == part or path.startswith(part + "/")) and (best is None or len(part) > len(best)):
            best = part
    return best


def part_of_target(name: str) -> str | None:
    """The part a library name belongs to (the longest part whose
    scalescope_<part with _ for /> starts it), "" for a name under a part
    container that no part owns (the old one-piece scalescope_trace), None
    for a name of no part (build helpers)."""
    best = None
    for part in ALLOWED:
        prefix = part.replace("/", "_")
        if (name == prefix or name.startswith(prefix + "_")) and (best is None or len(part) > len(best)):
            best = part
    if best is None and name.split("_")[0] in CONTAINERS:
        return ""
    return best


def allowed_text(allowed: set[str]) -> str:
    return ", ".join(sorted(allowed)) or "none"


def cmake_links(part: str, allowed: set[str], root: pathlib.Path) -> list[str]:
    """The part's CMakeLists.txt (its own folder and below) may name only its
    own targets and those of the parts it may include."""
    bad = []
    for path in sorted((root / part).rglob("CMakeLists.txt")):
        rel = path.relative_to(root)
        if "testdata" in rel.parts or part_of_path(rel.parent.as_posix()) != part:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            code = line.split("#", 1)[0]
            for m in TARGET.finditer(code):
                target = part_of_target(m.group(1))
                if target is None or target == part or target in allowed:
                    continue
                if target == "":
                    bad.append(f"{rel}:{number}: {part}/ links {m.group(0)}, a library of no part "
                               f"(the parts' libraries: scalescope_<part>, '/' written '_')")
                    continue
                bad.append(f"{rel}:{number}: {part}/ links {m.group(0)}, "
                           f"a part above it (allowed: {allowed_text(allowed)})")
    return bad


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    bad = []
    known_seen = set()
    checked = 0
    for part, allowed in ALLOWED.items():
        folder = root / part
        if not folder.is_dir():
            print(f"check_layers: {folder}: the part is missing (update ALLOWED and docs/architecture.md)")
            return 1
        for path in sorted(folder.rglob("*")):
            if path.suffix not in {".hpp", ".cpp", ".h", ".c", ".in"} or "testdata" in path.relative_to(root).parts:
                continue
            checked += 1
            text = path.read_text(encoding="utf-8", errors="replace")
            if part_of_path(path.relative_to(root).as_posix()) != part:
                continue  # a file of a part inside this one (none yet), checked as that part
            for m in INCLUDE.finditer(text):
                folder = m.group(1)
                target = part_of_path(folder)
                if target is None and folder.split("/")[0] in CONTAINERS:
                    line = text.count("\n", 0, m.end()) + 1
                    bad.append(f"{path.relative_to(root)}:{line}: {part}/ includes {m.group(0).strip()!r}, "
                               f"a header of no part")
                    continue
                if target is None or target == part:
                    continue  # own headers; generated or third-party folders
                if target not in allowed:
                    rel = path.relative_to(root).as_posix()
                    if (rel, target) in KNOWN and (root / "tests" / "layering").is_dir():
                        known_seen.add((rel, target))
                        continue
                    line = text.count("\n", 0, m.end()) + 1
                    bad.append(f"{path.relative_to(root)}:{line}: {part}/ includes {m.group(0).strip()!r}, "
                               f"a part above it (allowed: {allowed_text(allowed)})")
        bad.extend(cmake_links(part, allowed, root))
    # Every C++ source outside tests, docs and the like must lie in a part.
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "build"))):
        if folder.name in {"tests", "docs", "examples", "bench", "scripts", "python", "workloads", "node_modules"}:
            continue
        unplaced = sorted({c.parent.relative_to(root).as_posix() for c in folder.rglob("*.cpp")
                           if "testdata" not in c.relative_to(root).parts
                           and part_of_path(c.relative_to(root).as_posix()) is None})
        for rel in unplaced:
            bad.append(f"{rel}/: C++ sources that the layer order does not place")
    if (root / "tests" / "layering").is_dir():
        for rel, target in sorted(KNOWN - known_seen):
            bad.append(f"{rel}: no longer includes {target}/: remove it from KNOWN in tests/layering/check_layers.py")
    for b in bad:
        print(b)
    print(f"check_layers: {checked} files, {len(bad)} violation(s), {len(known_seen)} known")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
