#!/usr/bin/env bash
# The H200 run behind docs/benchmarks.md's "tensor parallelism on one GPU" figures: the sharded
# decoder (ranks as threads) against the unsharded one on the fixtures at 1, 2 and 4 ranks, and on
# Llama-3.1-8B's shapes (random weights, 2 layers) at 2, 4 and 8; then every other GPU test.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_shard_h200.sh BIN OUT
#   BIN: cuda_model_test and gpu_test built on the development machine, lib/ beside.
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
export TF_SOURCE_DIR=$PWD LD_LIBRARY_PATH=$bin/lib:${LD_LIBRARY_PATH:-}
python3 tools/make_random_checkpoint.py --shape llama31-8b --layers 2 --out /tmp/llama31-8b-2 \
  >/dev/null
"$bin"/cuda_model_test --gtest_filter='*ShardedFixture*:Sharded.Refuses*' >"$out/shard.txt" 2>&1 ||
  true
TF_SHARD_CHECKPOINT=/tmp/llama31-8b-2 "$bin"/cuda_model_test --gtest_filter='Sharded.Real*' \
  >"$out/shard_real.txt" 2>&1 || true
"$bin"/cuda_model_test --gtest_filter='-*Shard*' >"$out/cuda_model_test.txt" 2>&1 || true
"$bin"/gpu_test >"$out/gpu_test.txt" 2>&1 || true
grep -hF '[ sharded ]' "$out/shard.txt" "$out/shard_real.txt" || true
for f in shard shard_real cuda_model_test; do
  grep -E '^\[  (PASSED|FAILED) |Failure' "$out/$f.txt" | sed "s/^/$f: /" | tail -12
done
tail -1 "$out/gpu_test.txt" | sed 's/^/gpu_test: /'
