#!/usr/bin/env bash
# The H200 run behind docs/benchmarks.md's many-row decode tables: the kernel programs built here,
# the correctness checks (kernels, attention, the fixtures on CUDA), then the M-row step's anatomy
# (batch_step) and the engine at 1-128 streams with the matmuls' parts batched and chained
# (TF_CUDA_BATCHED_PARTS=0) side by side, a table last.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_h200.sh BIN_DIR OUT_DIR
#   BIN_DIR: engine_throughput and cuda_model_test built on the development machine, with lib/
#   holding the shared libraries the H200 image lacks.
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
export TF_SOURCE_DIR=$PWD LD_LIBRARY_PATH=$bin/lib:${LD_LIBRARY_PATH:-}
cmake -S src/backend/cuda -B build/h200 -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.txt"
ninja -C build/h200 -j16 gpu_test gpu_attention_test batch_step >"$out/build.txt"
build/h200/gpu/gpu_test >"$out/gpu_test.txt" 2>&1 || true
build/h200/gpu/gpu_attention_test >"$out/gpu_attention_test.txt" 2>&1 || true
"$bin"/cuda_model_test >"$out/cuda_model_test.txt" 2>&1 || true
build/h200/gpu/batch_step >"$out/batch_step.txt" 2>&1
python3 tools/make_random_checkpoint.py --shape llama31-8b --out /tmp/llama31-8b >/dev/null
engine() {
  TF_CUDA_STEP_TIMES=1 "$bin"/engine_throughput /tmp/llama31-8b --backend cuda --threads 8 \
    -c 1 -c 8 -c 32 -c 64 -c 128 --prompt 512 --gen 128 --kv-gib 40 --max-batch-tokens 8192 "$@"
}
engine >"$out/engine_batched.txt" 2>&1
TF_CUDA_BATCHED_PARTS=0 engine >"$out/engine_chained.txt" 2>&1
for f in gpu_test gpu_attention_test; do echo "$f: $(tail -1 "$out/$f.txt")"; done
grep -E "cuda fixture|PASSED|FAILED|Failure" "$out/cuda_model_test.txt" | tail -4
cat "$out/batch_step.txt"
for f in batched chained; do echo "== engine, parts $f"; grep -v '^\s*$' "$out/engine_$f.txt" | tail -12; done
