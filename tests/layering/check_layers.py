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

# part -> parts it may include (besides itself). Bottom first.
ALLOWED = {
    "trace": set(),
    "collect": {"trace"},
    "analyze": {"trace"},
    "advise": {"analyze", "trace"},
    "scaling": {"trace"},
    "sweep": {"analyze", "scaling", "trace"},
    "mlperf": {"scaling", "trace"},
    "report": {"advise", "analyze", "mlperf", "scaling", "sweep", "trace"},
    "demo": {"report", "sweep", "scaling", "trace"},
    "cli": {"advise", "analyze", "collect", "demo", "mlperf", "report", "scaling", "sweep", "trace"},
    "capi": {"advise", "analyze", "mlperf", "report", "scaling", "sweep", "trace"},
}
# Known violations being removed: listed so that no new one can
# join them; the check fails when one of these is gone but still listed.
KNOWN: set[tuple[str, str]] = set()  # none left (mlperf/ stopped building report tables)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)
# A library target of a part: scalescope_<part> or scalescope_<part>_<what>
# (scalescope_report_html, scalescope_collect_host). Build helpers share the
# prefix and name no part (scalescope_add_test).
TARGET = re.compile(r"\bscalescope_([a-z]+)(?:_[a-z_]+)?\b")


def cmake_links(part: str, allowed: set[str], root: pathlib.Path) -> list[str]:
    """The part's CMakeLists.txt (its own folder and below) may name only its
    own targets and those of the parts it may include."""
    bad = []
    for path in sorted((root / part).rglob("CMakeLists.txt")):
        if "testdata" in path.relative_to(root).parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            code = line.split("#", 1)[0]
            for m in TARGET.finditer(code):
                target = m.group(1)
                if target == part or target not in ALLOWED or target in allowed:
                    continue
                bad.append(f"{path.relative_to(root)}:{number}: {part}/ links {m.group(0)}, "
                           f"a part above it (allowed: {', '.join(sorted(allowed)) or 'none'})")
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
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                if target == part or target not in ALLOWED:
                    continue  # own headers; generated or third-party folders
                if target not in allowed:
                    rel = path.relative_to(root).as_posix()
                    if (rel, target) in KNOWN and (root / "tests" / "layering").is_dir():
                        known_seen.add((rel, target))
                        continue
                    line = text.count("\n", 0, m.end()) + 1
                    bad.append(f"{path.relative_to(root)}:{line}: {part}/ includes {m.group(0).strip()!r}, "
                               f"a part above it (allowed: {', '.join(sorted(allowed)) or 'none'})")
        bad.extend(cmake_links(part, allowed, root))
    # Every top-level folder with C++ in it must be placed in the order.
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "build"))):
        if folder.name in ALLOWED or folder.name in {"tests", "docs", "examples", "bench", "scripts", "python",
                                                     "workloads", "node_modules"}:
            continue
        if any(folder.rglob("*.cpp")):
            bad.append(f"{folder.name}/: a part with C++ sources that the layer order does not place")
    if (root / "tests" / "layering").is_dir():
        for rel, target in sorted(KNOWN - known_seen):
            bad.append(f"{rel}: no longer includes {target}/: remove it from KNOWN in tests/layering/check_layers.py")
    for b in bad:
        print(b)
    print(f"check_layers: {checked} files, {len(bad)} violation(s), {len(known_seen)} known")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
