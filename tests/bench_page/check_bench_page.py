#!/usr/bin/env python3
"""bench/ stays one page of current figures, and what points into it stays valid.

Checks, over the source tree:
- every section of bench/RESULTS.md that a document, script or code comment
  names (`bench/RESULTS.md, "Section"`, `RESULTS.md ("Section")`,
  `RESULTS.md (section "Section")`, `RESULTS.md#anchor`) exists: the quoted
  name is a heading of the page or the start of one;
- every `bench/...` path that bench/README.md, bench/RESULTS.md or docs/ name
  exists;
- every folder of bench/ is described in bench/README.md;
- no raw result folder (`results-*`) is in bench/, and no text in bench/ names
  an issue, a session or a helper.

Usage: check_bench_page.py SOURCE_DIR [--self-test]
--self-test copies the files the checks read into a temporary tree, puts one
fault of each kind into it and passes only when every fault is reported
(ctest `bench_page_links_detects_faults`).
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

TEXT_SUFFIXES = {".md", ".cpp", ".hpp", ".h", ".py", ".sh", ".txt", ".cu", ".cmake", ".js", ".ts"}
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
# `RESULTS.md, "X"`, `RESULTS.md ("X")`, `RESULTS.md (section "X")`, `RESULTS.md, section "X"`, `RESULTS.md "X"`
SECTION_REF = re.compile(r'RESULTS\.md\s*(?:[,(]\s*)?(?:section\s+)?"([^"]{1,200})"')
ANCHOR_REF = re.compile(r"RESULTS\.md#([A-Za-z0-9_-]+)")
BENCH_PATH = re.compile(r"(?<![\w./-])bench/[A-Za-z0-9_./-]*[A-Za-z0-9_]")
HISTORY = re.compile(r"\bissue\s*#?\d+|\bissue\d+|\bsessions?[- ]\d+|\bhelper\b|\blead engineer\b", re.I)
COMMENT_PREFIX = re.compile(r"^\s*(?://+|#+(?!#*\s*$)|\*|--)?\s?")


def text_files(root: pathlib.Path) -> list[pathlib.Path]:
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout.split("\n")
        files = [root / f for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in root.rglob("*")
                 if not any(part in SKIP_DIRS or part.startswith("build") for part in p.relative_to(root).parts)]
    return [p for p in files if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.name == "CMakeLists.txt")]


def joined(text: str) -> str:
    """The text with line breaks and comment markers folded, so that a quote wrapped over comment lines reads whole."""
    return " ".join(COMMENT_PREFIX.sub("", line, count=1) for line in text.split("\n"))


def slug(heading: str) -> str:
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def check(root: pathlib.Path) -> list[str]:
    bad: list[str] = []
    page = root / "bench" / "RESULTS.md"
    readme = root / "bench" / "README.md"
    if not page.is_file() or not readme.is_file():
        return [f"{page if not page.is_file() else readme}: missing"]
    page_text = page.read_text(encoding="utf-8")
    headings = [re.sub(r"\s+", " ", m.group(1)).strip() for m in re.finditer(r"^#{1,4} (.+)$", page_text, re.M)]
    anchors = {slug(h) for h in headings}
    for path in text_files(root):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("tests/bench_page/"):
            continue  # this check's own patterns and examples
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if "RESULTS.md" not in text:
            continue
        flat = re.sub(r"\s+", " ", joined(text))
        for m in SECTION_REF.finditer(flat):
            name = m.group(1).strip()
            if not any(h == name or h.startswith(name) for h in headings):
                bad.append(f"{rel}: names bench/RESULTS.md section \"{name}\", which the page does not have")
        for m in ANCHOR_REF.finditer(text):
            if m.group(1) not in anchors:
                bad.append(f"{rel}: links bench/RESULTS.md#{m.group(1)}, which the page does not have")
    # Paths named by the bench pages and the docs.
    for path in [page, readme] + sorted((root / "docs").glob("*.md")):
        rel = path.relative_to(root).as_posix()
        for m in BENCH_PATH.finditer(path.read_text(encoding="utf-8")):
            target = m.group(0).rstrip(".")
            if not (root / target).exists():
                bad.append(f"{rel}: names {target}, which does not exist")
    # Every folder described; no raw results; no internal history.
    readme_text = readme.read_text(encoding="utf-8")
    for folder in sorted(p for p in (root / "bench").iterdir() if p.is_dir() and p.name not in SKIP_DIRS):
        if f"`{folder.name}/`" not in readme_text:
            bad.append(f"bench/README.md: does not describe bench/{folder.name}/")
    for p in sorted((root / "bench").rglob("results-*")):
        bad.append(f"{p.relative_to(root).as_posix()}: a raw result folder in the tree (link the figure to its command)")
    for path in text_files(root / "bench") if (root / "bench").is_dir() else []:
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").split("\n"), 1):
            m = HISTORY.search(line)
            if m:
                bad.append(f"{rel}:{n}: internal history ({m.group(0)!r}): say what was measured, not who or when")
    return bad


def self_test(root: pathlib.Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "src"
        shutil.copytree(root / "bench", copy / "bench", ignore=shutil.ignore_patterns(*SKIP_DIRS))
        shutil.copytree(root / "docs", copy / "docs")
        clean = check(copy)
        if clean:
            print("check_bench_page --self-test: the copied tree is not clean:\n" + "\n".join(clean))
            return 1
        (copy / "docs" / "fault.md").write_text(
            'See bench/RESULTS.md, "A section that is not there", and\nbench/RESULTS.md#no-such-anchor, '
            "and bench/no_such_folder/run.sh.\n", encoding="utf-8")
        (copy / "bench" / "unlisted_subject").mkdir()
        (copy / "bench" / "unlisted_subject" / "run.sh").write_text("# Issue 23: a measurement\n", encoding="utf-8")
        (copy / "bench" / "analysis_speed" / "results-old").mkdir()
        found = check(copy)
        expected = ['section "A section that is not there"', "#no-such-anchor", "bench/no_such_folder/run.sh",
                    "does not describe bench/unlisted_subject/", "results-old", "'Issue 23'"]
        missed = [e for e in expected if not any(e in f for f in found)]
        for f in found:
            print("caught:", f)
        if missed:
            print("check_bench_page --self-test: not caught: " + ", ".join(missed))
            return 1
        print(f"check_bench_page --self-test: {len(expected)} faults, all caught")
        return 0


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    if "--self-test" in sys.argv[2:]:
        return self_test(root)
    bad = check(root)
    for b in bad:
        print(b)
    print(f"check_bench_page: {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
