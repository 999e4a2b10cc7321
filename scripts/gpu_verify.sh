#!/usr/bin/env bash
# One batch for the GPU machine (issue 5): verification tests + planted-defect suite + deployability + torch binding,
# `translate --all --verify --sanitize` (via python -m translate.verify), and the benchmark. Logs go under $OUT
# (at most 8 files come back): verify.log (everything printed), logs.txt (per-case report, sanitizer and deploy
# logs), manifest.json + records.json (verification records), defects.json, bench.csv/.md/.png.
#
# Usage on the device (after the wheel install line of shared/gpu/README.md):
#   PYTHONUNBUFFERED=1 bash scripts/gpu_verify.sh [--quick] [--no-defects] [--no-pytest]
set -u
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
LOG="$OUT/logs"
mkdir -p "$LOG"
export PYTHONUNBUFFERED=1 NUMBAKERN_VERIFY_LOG="$LOG"
SEEDS=3
BUDGET=0.8
PYTEST_K=()
PYTEST=1
for arg in "$@"; do
  case "$arg" in
    --quick) SEEDS=1; BUDGET=0.3 ;;
    --no-defects) PYTEST_K=(-k "not planted") ;;  # the defect suite already ran: deploy + torch tests only
    --no-pytest) PYTEST=0 ;;  # the whole suite already ran with --gpu
  esac
done
exec > >(tee "$OUT/verify.log") 2>&1

step() { echo; echo "######## $* ($(date -u +%H:%M:%S))"; }
status() { RESULTS+=("$(printf '%-44s %s' "$1" "$2")"); }
RESULTS=()

step environment
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nvcc --version | tail -1
compute-sanitizer --version | head -2 | tail -1
python3 -c "import numba, numpy, torch; print('numba', numba.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)"

if [ "$PYTEST" = 1 ]; then
  step "pytest --gpu tests/verify (defect suite, deployability, torch binding)"
  timeout 300 python3 -m pytest -p numbakern.pytest_plugin --gpu tests/verify -q -rs -p no:cacheprovider "${PYTEST_K[@]}"
  status "pytest tests/verify --gpu" "rc=$?"
fi

if [ -f generated_cuda/manifest.json ]; then
  step "translate --all --verify --sanitize (python -m translate.verify)"
  timeout 400 python3 -m translate.verify --all --sanitize --seeds "$SEEDS" --records-out "$OUT/records.json" --verify-log "$LOG"
  status "translate.verify --all --sanitize" "rc=$?"
  cp generated_cuda/manifest.json "$OUT/manifest.json"
else
  status "translate.verify --all" "skipped: no generated_cuda/manifest.json"
fi

step "benchmark"
timeout 240 python3 scripts/bench.py --out "$OUT" --budget "$BUDGET"
status "scripts/bench.py" "rc=$?"

# fold the per-topic logs into one file (the device returns at most 8 files)
for f in "$LOG"/*; do [ -f "$f" ] && { echo "######## $(basename "$f")"; cat "$f"; }; done > "$OUT/logs.txt" 2>/dev/null
[ -f "$LOG/defects.json" ] && cp "$LOG/defects.json" "$OUT/defects.json"
rm -rf "$LOG"

step summary
python3 - <<'PY'
import json, os
p = os.path.join(os.environ["OUT"] if "OUT" in os.environ else "gpu_out", "defects.json")
if os.path.exists(p):
    d = json.load(open(p))
    print(f"{'defect suite file':<40} {'expected':<22} {'verdict':<8} failing checks")
    for f, r in d.items():
        print(f"{f:<40} {r['expected']:<22} {'ACCEPT' if r['ok'] else 'REJECT':<8} {r['failing_checks']}")
PY
printf '%s\n' "${RESULTS[@]}"
