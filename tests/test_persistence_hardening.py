"""Persistence hardening (outside test findings): the pointer and the manifest are small regular files, the writer
lock never follows a planted link, loads racing a save loop never fail, and forged derived state (checksums
recomputed) is refused by validation."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from g2cons_plugins import G2ConSConfig, G2ConSIndex, PersistError
from g2cons_plugins.persistence import POINTER

DOCS = [
    {
        "id": f"d{i:02d}",
        "text": f"Alice Moreau{i % 3} met Bob Tanaka in Paris{i % 4}. They founded Acme{i % 5} in Lisbon.",
    }
    for i in range(24)
]
IDS = sorted(d["id"] for d in DOCS)


def _build(docs: list[dict[str, str]]) -> G2ConSIndex:
    return G2ConSIndex.build(docs, embedder="hash:32", config=G2ConSConfig(theta_co=1))


@pytest.fixture(scope="module")
def small() -> G2ConSIndex:
    return _build(DOCS)


@pytest.fixture
def saved(small: G2ConSIndex, tmp_path: Path) -> Path:
    path = tmp_path / "idx"
    small.save(path)
    return path


def V(path: Path) -> Path:
    return path / json.loads((path / POINTER).read_text(encoding="utf-8"))["data"]


def _quick_refusal(path: Path, match: str) -> PersistError:
    t = time.perf_counter()
    with pytest.raises(PersistError, match=match) as exc:
        G2ConSIndex.load(path)
    assert time.perf_counter() - t < 5.0
    return exc.value


# ---------------------------------------------------------------------------------------------- finding 1: CURRENT
def test_pointer_linked_to_dev_zero_is_refused_at_once(saved: Path) -> None:
    (saved / POINTER).unlink()
    (saved / POINTER).symlink_to("/dev/zero")
    err = _quick_refusal(saved, "symbolic link")
    assert POINTER in str(err)


def test_pointer_linked_to_a_real_pointer_is_refused(saved: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "pointer-copy"
    elsewhere.write_bytes((saved / POINTER).read_bytes())
    (saved / POINTER).unlink()
    (saved / POINTER).symlink_to(elsewhere)
    _quick_refusal(saved, "symbolic link")


def test_huge_pointer_is_refused_unread(saved: Path) -> None:
    with (saved / POINTER).open("r+b") as fh:
        fh.truncate(8 << 30)  # sparse: 8 GiB that a reader without a bound would read
    err = _quick_refusal(saved, "bytes")
    assert POINTER in str(err)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_pointer_that_is_not_a_regular_file_is_refused(saved: Path, kind: str) -> None:
    (saved / POINTER).unlink()
    if kind == "fifo":
        os.mkfifo(saved / POINTER)  # an unbounded reader would block here for ever
    else:
        (saved / POINTER).mkdir()
    err = _quick_refusal(saved, "regular file")
    assert POINTER in str(err)


def test_manifest_that_is_a_fifo_is_refused(saved: Path) -> None:
    mf = V(saved) / "manifest.json"
    mf.unlink()
    os.mkfifo(mf)
    err = _quick_refusal(saved, "regular file")
    assert "manifest.json" in str(err)


def test_save_replaces_a_pointer_linked_to_dev_zero_without_reading_it(small: G2ConSIndex, saved: Path) -> None:
    (saved / POINTER).unlink()
    (saved / POINTER).symlink_to("/dev/zero")
    t = time.perf_counter()
    small.save(saved)
    assert time.perf_counter() - t < 10.0
    assert not (saved / POINTER).is_symlink()
    assert [c.id for c in G2ConSIndex.load(saved).chunks] == IDS


# ---------------------------------------------------------------------------------------------- finding 4: .lock
def test_planted_lock_link_creates_nothing_outside(small: G2ConSIndex, saved: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "planted"
    outside.parent.mkdir()
    (saved / ".lock").unlink()
    (saved / ".lock").symlink_to(outside)
    with pytest.raises(PersistError, match=r"\.lock.*symbolic link"):
        small.save(saved)
    assert not outside.exists()
    assert [c.id for c in G2ConSIndex.load(saved).chunks] == IDS  # the index is untouched


def test_planted_lock_link_to_an_existing_file_leaves_it_alone(small: G2ConSIndex, saved: Path, tmp_path: Path) -> None:
    outside = tmp_path / "theirs"
    outside.write_text("keep")
    (saved / ".lock").unlink()
    (saved / ".lock").symlink_to(outside)
    with pytest.raises(PersistError, match="symbolic link"):
        small.save(saved)
    assert outside.read_text() == "keep"


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_lock_that_is_not_a_regular_file_is_refused(small: G2ConSIndex, saved: Path, kind: str) -> None:
    (saved / ".lock").unlink()
    if kind == "fifo":
        os.mkfifo(saved / ".lock")
    else:
        (saved / ".lock").mkdir()
    with pytest.raises(PersistError, match=r"\.lock"):
        small.save(saved)
