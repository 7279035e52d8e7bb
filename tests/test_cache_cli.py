"""``okfast cache prune`` (docs/spec.md §10.5): its lines, its JSON, its exit
statuses."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import write_bundle
from okfast import Bundle
from okfast.cli import main

NOTE = "---\ntype: note\ntitle: One\n---\nbody text\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cached(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A cache directory with the file of a live bundle and of a removed one."""
    cache = tmp_path / "cache"
    files = []
    for name in ("live", "gone"):
        write_bundle(tmp_path / name, {"one.md": NOTE})
        b = Bundle.load(tmp_path / name, cache_dir=cache)
        assert b.cache_file is not None
        files.append(b.cache_file)
    shutil.rmtree(tmp_path / "gone")
    return cache, files[0], files[1]


def test_prune_prints_each_file_removed_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache, live, gone = cached(tmp_path)
    size = gone.stat().st_size
    code, out, err = run(capsys, "cache", "prune", "--cache-dir", str(cache), "--dry-run")
    assert (code, err) == (0, "")
    assert out == (
        f"would remove {gone} (root gone: {tmp_path / 'gone'})\n"
        f"would remove 1 cache file ({size:,} bytes) from {cache}; kept 1\n"
    )
    assert gone.exists()
    code, out, err = run(capsys, "cache", "prune", "--cache-dir", str(cache))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == f"removed 1 cache file ({size:,} bytes) from {cache}; kept 1"
    assert not gone.exists() and live.exists()
    then = time.time() - 3 * 86_400
    os.utime(live, (then, then))
    code, out, err = run(
        capsys, "cache", "prune", "--cache-dir", str(cache), "--unused-days", "2.5"
    )
    assert out.splitlines()[0] == f"removed {live} (unused)"
    assert out.splitlines()[-1].startswith("removed 1 cache file (") and not live.exists()


def test_prune_json_is_one_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache, _, gone = cached(tmp_path)
    size = gone.stat().st_size
    code, out, _ = run(capsys, "cache", "prune", "--cache-dir", str(cache), "--json")
    assert code == 0
    assert json.loads(out) == {
        "cache_dir": str(cache),
        "dry_run": False,
        "removed": [
            {
                "path": str(gone),
                "reason": "root gone",
                "root": str(tmp_path / "gone"),
                "bytes": size,
            }
        ],
        "freed_bytes": size,
        "kept": 1,
        "errors": [],
    }


def test_a_file_not_removed_is_status_1_and_bad_usage_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, _, gone = cached(tmp_path)

    def refused(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "unlink", refused)
    code, out, err = run(capsys, "cache", "prune", "--cache-dir", str(cache))
    assert code == 1
    assert err == f"okfast: {gone}: cannot be removed (Permission denied)\n"
    assert out == f"removed 0 cache files (0 bytes) from {cache}; kept 2\n"
    monkeypatch.undo()
    for bad in ("-1", "nan", "x", "1_0"):
        with pytest.raises(SystemExit) as e:
            main(["cache", "prune", "--cache-dir", str(cache), "--unused-days", bad])
        assert e.value.code == 2
    assert "argument --unused-days" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "cache", "prune", "--cache-dir", str(tmp_path / "file"))
    assert code == 2 and err.startswith(
        f"okfast: cache directory {tmp_path / 'file'} cannot be listed"
    )
    monkeypatch.setenv("OKFAST_CACHE_DIR", "off")
    code, _, err = run(capsys, "cache", "prune")
    assert code == 2 and "the cache is disabled" in err
