#!/usr/bin/env bash
# Fresh venv, install, run the offline demo (no network, no LLM).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${G2CONS_VENV:-.venv}"
python3 -m venv "$VENV"
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[all]"
HF_HUB_OFFLINE=1 python examples/demo.py "$@"
