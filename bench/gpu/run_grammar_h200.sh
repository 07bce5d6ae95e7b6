#!/usr/bin/env bash
# The H200 run behind docs/benchmarks.md's masked-decode figures: the fixtures on CUDA (grammar
# masks included), then engine_throughput at 8 streams, greedy and sampled, unmasked, with device
# masks (--grammar) and with host masks (TF_CUDA_DEVICE_MASKS=0) side by side; a summary last.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_grammar_h200.sh BIN OUT
#   BIN: cuda_model_test and engine_throughput built on the development machine, lib/ beside.
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
export TF_SOURCE_DIR=$PWD LD_LIBRARY_PATH=$bin/lib:${LD_LIBRARY_PATH:-}
"$bin"/cuda_model_test >"$out/cuda_model_test.txt" 2>&1 || true
python3 tools/make_random_checkpoint.py --shape llama31-8b --out /tmp/llama31-8b >/dev/null
engine() {
  "$bin"/engine_throughput /tmp/llama31-8b --backend cuda --threads 8 -c 8 --prompt 512 \
    --gen 128 --kv-gib 20 --rounds 3 "$@"
}
for t in 0 1; do
  engine --temperature "$t" >"$out/plain_t$t.txt" 2>&1
  engine --temperature "$t" --grammar >"$out/device_mask_t$t.txt" 2>&1
  TF_CUDA_DEVICE_MASKS=0 engine --temperature "$t" --grammar >"$out/host_mask_t$t.txt" 2>&1
done
grep -E "CudaMask|PASSED|FAILED|Failure" "$out/cuda_model_test.txt" | tail -6
for f in plain_t0 device_mask_t0 host_mask_t0 plain_t1 device_mask_t1 host_mask_t1; do
  echo "$f: $(grep -E '^\| 8 ' "$out/$f.txt")"
done
