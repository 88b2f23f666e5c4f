#!/usr/bin/env python3
"""Runs the shell examples of README.md, then of docs/guide.md, as a new user would,
from the top down.

Every ```sh block of those pages must follow a marker line:
  <!-- example: run -->            run it (no GPU, no data beyond the clone)
  <!-- example: needs-shared -->   run it when ../shared/data exists beside the clone
  <!-- example: needs-gpu -->      run it only with SCALESCOPE_README_GPU=1
  <!-- example: skip REASON -->    never run here (REASON is printed)
A block without a marker fails the test, so no example escapes it.

The blocks run in order in one scratch "clone": a folder whose entries link to
the source tree's, with build/ linking to the build folder, so outputs of the
examples land in the scratch folder and later blocks find earlier outputs.
Usage: run_readme_examples.py SOURCE_DIR BUILD_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!-- example: (run|needs-shared|needs-gpu|skip)\s*(.*?)\s*-->$")


def blocks(readme):
    lines = open(readme, encoding="utf-8").read().split("\n")
    out, i, marker, marker_line = [], 0, None, 0
    while i < len(lines):
        m = MARKER.match(lines[i].strip())
        if m:
            marker, marker_line = (m.group(1), m.group(2)), i + 1
        elif lines[i].strip() == "```sh":
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            # The marker must be the last non-blank line before the block.
            if marker is None or any(l.strip() for l in lines[marker_line:start - 1]):
                out.append((None, "", start, body))
            else:
                out.append((marker[0], marker[1], start, body))
            marker = None
        i += 1
    return out


def untracked(source):
    """Files git does not know in the source tree: the examples run in a clone whose entries
    link to the source's, so a command writing into a folder of that name (say `-o demo`, a
    part's folder) writes into the source tree; the test fails when that happens."""
    r = subprocess.run(["git", "-C", source, "status", "--porcelain", "--untracked-files=all"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if r.returncode != 0:
        return None
    return {l[3:] for l in r.stdout.splitlines() if l.startswith("?? ")}


def main():
    source, build = map(os.path.abspath, sys.argv[1:3])
    before = untracked(source)
    scratch = tempfile.mkdtemp(prefix="scalescope-readme-")
    clone = os.path.join(scratch, "clone")
    os.mkdir(clone)
    for entry in os.listdir(source):
        if entry in ("build", ".git"):
            continue
        os.symlink(os.path.join(source, entry), os.path.join(clone, entry))
    os.symlink(build, os.path.join(clone, "build"))
    shared = os.path.join(os.path.dirname(source), "shared")
    has_shared = os.path.isdir(os.path.join(shared, "data"))
    if has_shared:
        os.symlink(shared, os.path.join(scratch, "shared"))
    env = dict(os.environ, NO_COLOR="1")
    env.pop("COLUMNS", None)
    failures, ran, skipped = 0, 0, 0
    pages = ("README.md", os.path.join("docs", "guide.md"))
    examples = [(page, *block) for page in pages for block in blocks(os.path.join(source, page))]
    for page, kind, reason, line, body in examples:
        where = f"{page}:{line}"
        if kind is None:
            print(f"FAIL {where}: a ```sh block without an '<!-- example: ... -->' marker line before it")
            failures += 1
            continue
        why = None
        if kind == "skip":
            why = reason or "marked skip"
        elif kind == "needs-gpu" and os.environ.get("SCALESCOPE_README_GPU") != "1":
            why = "needs a GPU (set SCALESCOPE_README_GPU=1 on a GPU machine)"
        elif kind == "needs-shared" and not has_shared:
            why = f"needs the data folder {shared}/data beside the clone"
        if why:
            print(f"SKIP {where}: {why}")
            skipped += 1
            continue
        script = "\n".join(body)
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                           timeout=900)
        ran += 1
        if r.returncode != 0:
            failures += 1
            print(f"FAIL {where}: exit {r.returncode}\n--- block\n{script}\n--- output (last 3000 characters)\n"
                  f"{r.stdout[-3000:]}")
        else:
            print(f"ok   {where}")
    after = untracked(source)
    if before is not None and after is not None and after - before:
        failures += 1
        print(f"FAIL: the examples wrote into the source tree: {', '.join(sorted(after - before)[:10])}")
    print(f"{ran} example block(s) ran, {skipped} skipped, {failures} failed; scratch folder {scratch}")
    if failures == 0:
        subprocess.run(["rm", "-rf", scratch])
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
