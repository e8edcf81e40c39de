"""A full disk or a file size limit while writing: the error names the file being written and says what stays
intact (a :class:`~g2cons_plugins.errors.PersistError`, an ``OSError``), for ``save()`` and for every file the
command line writes; nothing half-written is left behind and the previous state still loads."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, PersistError
from g2cons_plugins.cli import main
from g2cons_plugins.storage import outputs, persistence

NO_ROOM = [(errno.ENOSPC, "No space left on device", "make room"), (errno.EFBIG, "File too large", "ulimit -f")]


@pytest.fixture
def index(corpus: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(corpus[:30], embedder="hash", config=G2ConSConfig(theta_co=2))


def _failing_write(name: str, code: int, text: str) -> Callable[[Path, Callable[[Any], Any]], None]:
    """persistence's file writer, failing like a full disk half-way through the file called ``name``."""
    real = persistence._write

    def write(path: Path, fill: Callable[[Any], Any]) -> None:
        if Path(path).name.startswith(name):
            with Path(path).open("xb") as fh:
                fh.write(b"\x93NUMPY partial")
            raise OSError(code, text)  # as a write() raises it: no file name
        real(path, fill)

    return write


def _listing(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


@pytest.mark.parametrize(("code", "text", "fix"), NO_ROOM)
@pytest.mark.parametrize("name", ["unit_vectors.npy", "manifest.json", ".tmp-CURRENT-"])
def test_save_names_the_file_and_keeps_the_previous_save(
    index: G2ConSIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, code: int, text: str, fix: str
) -> None:
    path = tmp_path / "idx"
    index.save(path)
    before = _listing(path)
    previous = json.loads((path / "CURRENT").read_text(encoding="utf-8"))["data"]
    monkeypatch.setattr(persistence, "_write", _failing_write(name, code, text))
    with pytest.raises(PersistError) as err:
        index.save(path)
    msg = str(err.value)
    assert isinstance(err.value, OSError) and isinstance(err.value.__cause__, OSError)
    assert msg.startswith(f"{path}: cannot save the index: {text} while writing ") and name in msg
    assert f"unchanged and loads its previous save ({previous})" in msg and fix in msg
    monkeypatch.undo()
    assert _listing(path) == before  # no partial version, no stray pointer
    assert [c.id for c in G2ConSIndex.load(path).chunks] == [c.id for c in index.chunks]


def test_a_first_save_that_runs_out_of_room_says_nothing_was_saved(
    index: G2ConSIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "idx"
    monkeypatch.setattr(persistence, "_write", _failing_write("manifest.json", errno.ENOSPC, "No space left on device"))
    with pytest.raises(PersistError, match=rf"manifest\.json; no index was saved at {path}"):
        index.save(path)
    assert [p for p in _listing(path) if p != ".lock"] == []


def _fsync_fails(monkeypatch: pytest.MonkeyPatch, code: int, text: str) -> None:
    """Every fsync (the atomic write's, after its data) fails as on a full disk."""

    def fsync(fd: int) -> None:
        raise OSError(code, text)

    monkeypatch.setattr(outputs.os, "fsync", fsync)


@pytest.mark.parametrize(("code", "text", "fix"), NO_ROOM)
def test_the_command_line_names_the_output_it_could_not_write(
    index: G2ConSIndex,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: int,
    text: str,
    fix: str,
) -> None:
    graph = tmp_path / "g"
    index.save(graph)
    out = tmp_path / "concepts.json"
    _fsync_fails(monkeypatch, code, text)
    assert main(["export", str(graph), "--format", "json", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"g2cons: error: {out}: cannot write it: {text}; nothing was written in its place ({out} was not "
        "created, the partial copy removed): "
    )
    assert str(out) in err and text in err and fix in err
    assert sorted(os.listdir(tmp_path)) == ["g"]  # no partial file


def test_select_names_its_output_file_on_a_full_disk(
    corpus: list[dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": r["text"]}) + "\n" for i, r in enumerate(corpus[:20])))
    out = tmp_path / "core.jsonl"
    _fsync_fails(monkeypatch, errno.ENOSPC, "No space left on device")
    assert main(["select", str(src), "--out", str(out), "--embedder", "hash", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{out}: cannot write it: No space left on device" in err and not out.exists()
