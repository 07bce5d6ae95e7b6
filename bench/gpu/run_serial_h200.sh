#!/usr/bin/env bash
# The H200 run behind docs/benchmarks.md's "drafting on the H200" figures: the fixtures on CUDA,
# then engine_throughput at 1 and 8 streams, greedy and sampled, with the engine's drafting on
# and with every request "draft": false, side by side (random Llama-3.1-8B weights: the drafts of
# prose that copies nothing); the engine's start-up verify-cost line; a summary last.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_serial_h200.sh BIN OUT
#   BIN: cuda_model_test and engine_throughput built on the development machine, lib/ beside.
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
export TF_SOURCE_DIR=$PWD LD_LIBRARY_PATH=$bin/lib:${LD_LIBRARY_PATH:-}
"$bin"/cuda_model_test >"$out/cuda_model_test.txt" 2>&1 || true
python3 tools/make_random_checkpoint.py --shape llama31-8b --out /tmp/llama31-8b >/dev/null
engine() {
  "$bin"/engine_throughput /tmp/llama31-8b --backend cuda --threads 8 --prompt 512 \
    --gen 128 --kv-gib 20 --rounds 3 "$@"
}
for t in 0 1; do
  engine --temperature "$t" >"$out/draft_t$t.txt" 2>&1
  engine --temperature "$t" --no-draft >"$out/serial_t$t.txt" 2>&1
done
grep -E "PASSED|FAILED|Failure" "$out/cuda_model_test.txt" | tail -8
grep -m1 "verify cost" "$out/draft_t0.txt" || true
for f in draft_t0 serial_t0 draft_t1 serial_t1; do
  grep -E '^\| (1|8) ' "$out/$f.txt" | sed "s/^/$f: /"
done
