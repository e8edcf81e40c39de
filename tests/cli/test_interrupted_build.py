"""A ``g2cons build`` killed at any point (``kill -9``, Ctrl-C) leaves no torn graph and no litter: ``--graph``
is absent (a first build) or the previous graph, whole; what the killed run left beside it (a stamped
``.NAME.tmp-*`` folder) is removed by the next build, which succeeds into the same folder; and nothing is left in
the temporary folder (the build's spools are unnamed files).

The builds run as ``python -m g2cons_plugins.cli build`` in a child process with its own ``TMPDIR``. A kill
"mid-build" waits until the child holds a file open in that ``TMPDIR`` (its first spool: it is reading and
storing the chunks), so it does not depend on the machine's speed."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from g2cons_plugins.cli import main
from g2cons_plugins.errors import PersistError
from g2cons_plugins.index import G2ConSIndex

HASH = ["--embedder", "hash", "--quiet"]
WORDS = [
    a + b for a in ("al", "be", "co", "da", "el", "fa", "go", "ha", "in", "ju") for b in ("ric", "mon", "tas", "vel")
]

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="watches the child through /proc")


def _corpus(path: Path, n: int) -> Path:
    rng = random.Random(n)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(" ".join(rng.choice(WORDS) for _ in range(8)).capitalize() + "." for _ in range(3))
            f.write(json.dumps({"id": f"p{i:05d}", "text": text}) + "\n")
    return path


def _env(tmpdir: Path) -> dict[str, str]:
    tmpdir.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmpdir), "HF_HUB_OFFLINE": "1"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _holds_a_file_in(pid: int, folder: Path) -> bool:
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return any(link.startswith(str(folder) + os.sep) for link in links)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _check_after_kill(graph: Path, tmpdir: Path, previous: int | None) -> None:
    """``graph`` absent (``previous`` None) or the previous graph of ``previous`` chunks, loadable; beside it only
    a stamped unfinished copy; nothing in the child's TMPDIR."""
    assert _leftovers(tmpdir) == []
    if previous is None:
        assert not graph.exists()
    else:
        assert len(G2ConSIndex.load(graph).chunks) == previous
    beside = [n for n in _leftovers(graph.parent) if n not in (graph.name, "corpus.jsonl", "small.jsonl", "tmp")]
    assert all(n.startswith(f".{graph.name}.tmp-") for n in beside), beside


def _next_build_succeeds(small: Path, graph: Path) -> None:
    assert main(["build", str(small), "--graph", str(graph), *HASH]) == 0
    assert len(G2ConSIndex.load(graph).chunks) == 50
    assert not [n for n in _leftovers(graph.parent) if n.startswith(f".{graph.name}.")]  # the unfinished copy went


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_build_killed_mid_build_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    big, small = _corpus(tmp_path / "corpus.jsonl", 20_000), _corpus(tmp_path / "small.jsonl", 50)
    graph, tmpdir = tmp_path / "graph", tmp_path / "tmp"
    argv = [sys.executable, "-m", "g2cons_plugins.cli", "build", str(big), "--graph", str(graph), *HASH]
    # an ignored SIGINT is inherited through exec (another test or the shell running pytest may leave it so), and
    # Python then installs no KeyboardInterrupt handler: spawn the child with Python's own disposition
    previous_sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        child = subprocess.Popen(argv, env=_env(tmpdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous_sigint)
    try:
        deadline = time.monotonic() + 60
        while not _holds_a_file_in(child.pid, tmpdir):
            assert child.poll() is None and time.monotonic() < deadline, "the build never opened a spool"
            time.sleep(0.02)
        child.send_signal(sig)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    if sig == signal.SIGKILL:
        assert child.returncode == -signal.SIGKILL
    else:
        assert child.returncode == 130 and "g2cons: interrupted" in err, err
    _check_after_kill(graph, tmpdir, None)
    _next_build_succeeds(small, graph)


KILLED_IN_SAVE = textwrap.dedent(
    """
    import os, signal, sys
    from g2cons_plugins.cli import main
    real_rename = os.rename
    def rename(a, b, *rest, **kw):
        if os.path.basename(str(a)).startswith(".tmp-v-"):
            os.kill(os.getpid(), signal.SIGKILL)  # the new version is written, not yet in place
        return real_rename(a, b, *rest, **kw)
    os.rename = rename
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.parametrize("first", [True, False], ids=["first-build", "rebuild"])
def test_a_build_killed_while_it_saves_leaves_no_torn_graph(tmp_path: Path, first: bool) -> None:
    small = _corpus(tmp_path / "small.jsonl", 50)
    graph, tmpdir = tmp_path / "graph", tmp_path / "tmp"
    if not first:  # a graph of 20 documents is there already
        rows = small.read_text(encoding="utf-8").splitlines()[:20]
        (tmp_path / "corpus.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
        assert main(["build", str(tmp_path / "corpus.jsonl"), "--graph", str(graph), *HASH]) == 0
    argv = [sys.executable, "-c", KILLED_IN_SAVE, "build", str(small), "--graph", str(graph), *HASH]
    done = subprocess.run(argv, env=_env(tmpdir), capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    _check_after_kill(graph, tmpdir, None if first else 20)
    if first:  # the unfinished copy is beside, stamped: never taken for a graph
        (unfinished,) = [p for p in tmp_path.iterdir() if p.name.startswith(".graph.tmp-")]
        with pytest.raises(PersistError):
            G2ConSIndex.load(unfinished / "graph")
    else:  # the killed save's temporary version is inside, under a name of ours that the next save removes
        assert any(n.startswith(".tmp-v-") for n in _leftovers(graph))
    _next_build_succeeds(small, graph)
    assert not any(n.startswith(".tmp-") for n in _leftovers(graph))
