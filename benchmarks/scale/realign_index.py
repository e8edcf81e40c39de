"""A copy of a saved index whose ``.npz`` files are rewritten by today's writer (``storage.derived_io.savez``: each
member 64-byte aligned), the same arrays in the same order; the other files hard-linked; the manifest's checksums
and the ``CURRENT`` pointer updated. For measuring what aligned members change on an index saved before them.

    python benchmarks/scale/realign_index.py SRC DST
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from g2cons_plugins.storage.derived_io import savez
from g2cons_plugins.storage.npz_view import NpzView


def main(src: Path, dst: Path) -> None:
    if dst.exists():
        raise SystemExit(f"{dst} exists: give a new folder")
    current = json.loads((src / "CURRENT").read_text(encoding="utf-8"))
    version = current["data"]
    (dst / version).mkdir(parents=True)
    manifest = json.loads((src / version / "manifest.json").read_text(encoding="utf-8"))
    for name in manifest["files"]:
        if name.endswith(".npz"):
            view = NpzView(src / version / name)
            with open(dst / version / name, "wb") as fh:
                savez(fh, {k: view[k] for k in view.files})
        else:
            try:
                os.link(src / version / name, dst / version / name)
            except OSError:
                shutil.copy2(src / version / name, dst / version / name)
        manifest["files"][name] = hashlib.sha256((dst / version / name).read_bytes()).hexdigest()
    (dst / version / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    current["manifest_sha256"] = hashlib.sha256((dst / version / "manifest.json").read_bytes()).hexdigest()
    (dst / "CURRENT").write_text(json.dumps(current, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
