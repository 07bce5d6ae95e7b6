#!/usr/bin/env bash
# The H200 run behind docs/benchmarks.md's CUDA tables: the fixtures on CUDA first (correctness and
# batch invariance), then end-to-end engine speed on random weights with Llama-3.1-8B's shapes, then
# the kernel bench with the floors (copy bandwidth, cuBLASLt peak) measured in the same run.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_h200.sh BIN_DIR OUT_DIR
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
export TF_SOURCE_DIR=$PWD
"$bin"/gpu_test 2>&1 | tee "$out/gpu_test.txt" | tail -1
"$bin"/gpu_attention_test 2>&1 | tee "$out/gpu_attention_test.txt" | tail -1
"$bin"/cuda_model_test 2>&1 | grep -E "cuda fixture|PASSED|FAILED|SKIPPED \]|Failure" \
  | tee "$out/correctness.txt" || true
python3 tools/make_random_checkpoint.py --shape llama31-8b --out /tmp/llama31-8b
"$bin"/engine_throughput /tmp/llama31-8b --backend cuda --threads 8 -c 1 -c 8 -c 32 -c 64 -c 128 \
  --prompt 512 --gen 128 --kv-gib 40 --max-batch-tokens 8192 --prefill 512 --prefill 4096 \
  2>&1 | tee "$out/engine_cuda.txt"
"$bin"/gpu_bench 2>&1 | tee "$out/gpu_bench.txt"
