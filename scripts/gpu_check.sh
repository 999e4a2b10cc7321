#!/usr/bin/env bash
# Everything that needs a GPU, in one go:
#   tests   the whole test suite on the device (pytest --gpu)
#   verify  every generated .cu against its Numba kernel, with compute-sanitizer (python -m translate.verify)
#   bench   every registered kernel: Numba vs translated C vs torch (scripts/bench.py)
#   matmul  the fp32 matmul study (scripts/bench_matmul.py)
#
#   bash scripts/gpu_check.sh [tests] [verify] [bench] [matmul]     # default: all four, in this order
#
# Results and full logs go to $OUT (default build/gpu_out): <step>.log for tests and verify (bench.log and
# bench_matmul.log are written by the tools themselves), the benchmarks' csv/md/png, records.json (the
# verification records; apply them to a checkout with `python -m translate.verify --apply records.json`) and
# details/ (per-case reports, sanitizer logs, the planted-defect verdicts). A summary table is printed last.
# Exit status: 0 every step passed, 1 a step failed, 2 no GPU or a bad argument.
set -u
cd "$(dirname "$0")/.."
export OUT="${OUT:-$PWD/build/gpu_out}" PYTHONUNBUFFERED=1
export NUMBAKERN_VERIFY_LOG="$OUT/details"
mkdir -p "$OUT" "$NUMBAKERN_VERIFY_LOG"

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests verify bench matmul)
for step in "${steps[@]}"; do
  case "$step" in
    tests|verify|bench|matmul) ;;
    *) echo "gpu_check.sh: unknown step '$step' (expected tests, verify, bench or matmul)" >&2; exit 2 ;;
  esac
done
if ! python3 -c "from numbakern import mode; raise SystemExit(0 if mode.gpu_available() else 1)"; then
  echo "gpu_check.sh: needs a CUDA GPU, and the CUDA driver reports none on this machine" >&2
  exit 2
fi

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  python3 -c "import numba, numpy, torch; print('numba', numba.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)"
} > "$OUT/environment.log" 2>&1
cat "$OUT/environment.log"

# numbakern's pytest plugin (--gpu) comes with `pip install`; from a plain checkout on PYTHONPATH, load it by name
plugin=(-p numbakern.pytest_plugin)
python3 -c "from importlib.metadata import entry_points as e; raise SystemExit(0 if any(
  p.value == 'numbakern.pytest_plugin' for p in e(group='pytest11')) else 1)" && plugin=()

summary=()
failed=0
for step in "${steps[@]}"; do
  echo
  echo "######## $step"
  start=$SECONDS
  case "$step" in
    tests)  log="$OUT/tests.log"
            python3 -m pytest "${plugin[@]}" --gpu -q -rs -p no:cacheprovider 2>&1 | tee "$log"; rc=${PIPESTATUS[0]} ;;
    verify) log="$OUT/verify.log"
            python3 -m translate.verify --all --sanitize --records-out "$OUT/records.json" \
              --verify-log "$NUMBAKERN_VERIFY_LOG" 2>&1 | tee "$log"; rc=${PIPESTATUS[0]} ;;
    bench)  log="$OUT/bench.log"; python3 scripts/bench.py; rc=$? ;;
    matmul) log="$OUT/bench_matmul.log"; python3 scripts/bench_matmul.py; rc=$? ;;
  esac
  [ "$rc" -ne 0 ] && failed=1
  last=$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -1 | cut -c1-110)
  summary+=("$(printf '%-7s %-6s %6ss  %s' "$step" "$([ "$rc" -eq 0 ] && echo ok || echo "rc=$rc")" "$((SECONDS - start))" "$last")")
done

echo
echo "######## summary (logs and results in $OUT)"
printf '%-7s %-6s %7s  %s\n' step status time "last line of the log"
printf '%s\n' "${summary[@]}"
exit $failed
