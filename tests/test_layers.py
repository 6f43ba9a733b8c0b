"""The import contracts of ``pyproject.toml`` ([tool.importlinter]) hold: checked by import-linter,
not by hand, so a lower layer that reaches up (even lazily, inside a function) fails the suite."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_import_contracts_are_kept():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "lint-imports not found: pip install -e '.[test]'"
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
