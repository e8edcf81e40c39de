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


# ---------------------------------------------------------------------------------------------- finding 2: races
ROOT = Path(__file__).resolve().parents[1]
BIG = [
    {
        "id": f"p{i:04d}",
        "text": f"Person{i % 37} studied Topic{i % 23} at Place{i % 19}. Person{(i * 7) % 37} wrote about "
        f"Topic{(i * 3) % 23} in City{i % 29}. The work of Person{i % 37} was cited in Journal{i % 11}.",
    }
    for i in range(1200)
]
BIG_A, BIG_B = BIG[:800], BIG[400:]
SAVE_LOOP = """
import json, sys
from g2cons_plugins import G2ConSConfig, G2ConSIndex
docs = json.loads(open(sys.argv[2], encoding="utf-8").read())
cfg = G2ConSConfig(theta_co=1)
a = G2ConSIndex.build(docs[:800], embedder="hash:32", config=cfg)
b = G2ConSIndex.build(docs[400:], embedder="hash:32", config=cfg)
print("ready", flush=True)
i = 0
while True:
    (a if i % 2 == 0 else b).save(sys.argv[1])
    i += 1
    with open(sys.argv[3], "w") as fh:
        fh.write(str(i))
"""


def _slow_reads(monkeypatch: pytest.MonkeyPatch, seconds: float, during: object = None) -> None:
    """Make every load spend ``seconds`` between reading the stored and the derived state (a load of a large
    index takes 19 s at 1M passages), calling ``during()`` there first."""
    import g2cons_plugins.persistence as persistence

    real = persistence.read_derived

    def slow(*args: object, **kwargs: object) -> object:
        if callable(during):
            during()
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(persistence, "read_derived", slow)


def _versions(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name.startswith("v-"))


def test_a_load_pins_its_version_against_any_number_of_saves(
    small: G2ConSIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saves (here three, in this process, between two steps of every load) never remove the version a load
    reads: it returns that version, not an error; the next save once it is done removes it."""
    path = tmp_path / "idx"
    other = _build(DOCS[:6])
    other.save(path)
    pinned = V(path)
    _slow_reads(monkeypatch, 0.0, during=lambda: [small.save(path) for _ in range(3)])
    loaded = G2ConSIndex.load(path)
    assert [c.id for c in loaded.chunks] == sorted(d["id"] for d in DOCS[:6])  # the version it started on
    assert pinned.is_dir()  # kept by the saves while the load read it
    monkeypatch.undo()
    small.save(path)
    assert not pinned.exists() and len(_versions(path)) == 2


def test_loads_never_fail_against_a_tight_save_loop_in_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    path, docs, count = tmp_path / "idx", tmp_path / "docs.json", tmp_path / "saves"
    docs.write_text(json.dumps(BIG), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    p = subprocess.Popen(
        [sys.executable, "-c", SAVE_LOOP, str(path), str(docs), str(count)], stdout=subprocess.PIPE, text=True, env=env
    )
    want = (sorted(d["id"] for d in BIG_A), sorted(d["id"] for d in BIG_B))
    errors: list[str] = []
    loads, most_versions = 0, 0
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        while not count.exists():
            time.sleep(0.01)
        _slow_reads(monkeypatch, 0.4)  # each load overlaps several saves
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline and p.poll() is None:
            try:
                assert [c.id for c in G2ConSIndex.load(path).chunks] in want
            except Exception as e:  # noqa: BLE001 - every failure counts
                errors.append(repr(e))
            loads += 1
            most_versions = max(most_versions, len(_versions(path)))
        saves = int(count.read_text() or 0)
    finally:
        p.kill()
        p.wait()
    assert not errors, (len(errors), loads, errors[:3])
    assert loads >= 10 and saves >= 2 * loads, (loads, saves)
    assert most_versions <= 4  # the new one, the previous one, and the one a load had pinned
    monkeypatch.undo()
    _build(DOCS).save(path)  # nothing pinned now: all but the new and the previous version go
    assert len(_versions(path)) == 2
    assert [c.id for c in G2ConSIndex.load(path).chunks] == IDS
