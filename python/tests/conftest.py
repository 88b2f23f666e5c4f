"""Shared paths and helpers of the Python package's tests. The library comes
from $SCALESCOPE_LIBRARY or the checkout's build/; the CLI from
$SCALESCOPE_CLI or build/cli/scalescope."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

SAMPLE = ROOT / "examples" / "sample" / "kineto-sample.json.gz"
STUDY_RUNS = [
    ROOT / "examples" / "h200" / "image-base" / "traces" / "0010-g2-arm_base-variant_ref-r0.ssrun",
    ROOT / "examples" / "h200" / "llm" / "traces" / "0004-g2-method_lora-r0.ssrun",
]
SWEEP_DB = ROOT / "examples" / "h200" / "image-base.db"
MLPERF_TESTDATA = ROOT / "mlperf" / "testdata"


def cli_path():
    return Path(os.environ.get("SCALESCOPE_CLI", ROOT / "build" / "cli" / "scalescope"))


def cli_json(*args):
    """Runs the CLI and parses its JSON output."""
    out = subprocess.run([str(cli_path()), *map(str, args)], check=True, capture_output=True, text=True,
                         env={**os.environ, "NO_COLOR": "1"})
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def cli():
    if not cli_path().is_file():
        pytest.skip(f"no scalescope CLI at {cli_path()} (set SCALESCOPE_CLI)")
    return cli_json
