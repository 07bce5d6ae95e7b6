#!/usr/bin/env bash
# The H200 run behind docs/benchmarks.md's long-prefill tables: the correctness checks (the fixtures
# on CUDA; for each build of the prefill kernel, every attention launch shape and 32K positions
# whole = chunked), then bench/gpu/long_prefill's attention alone for each build beside the
# previous one (v0), and TTFT for the previous build and the fastest new one; a table last.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_load_h200.sh PACK OUT
#   PACK: a .tar.xz built on the development machine holding cuda_model_test, long_prefill_V,
#   gpu_attention_test_V and gpu_attention_chunks_test_V for each build V (long_prefill_v0 only:
#   the previous kernels), and the shared libraries the H200 image lacks.
set -uo pipefail
pack=$1
out=$2
bin=/tmp/load_bins
mkdir -p "$out" "$bin"
tar -xJf "$pack" -C "$bin" || python3 -c "import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$pack" "$bin"
export TF_SOURCE_DIR=$PWD LD_LIBRARY_PATH=$bin:${LD_LIBRARY_PATH:-}
builds=$(ls "$bin" | sed -n 's/^gpu_attention_test_//p')
tests=$out/tests.txt bench=$out/bench.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv >"$tests" 2>&1
timeout 150 "$bin"/cuda_model_test >"$out/cuda_model_test.txt" 2>&1
for v in $builds; do
  echo "== $v" >>"$tests"
  "$bin/gpu_attention_test_$v" >>"$tests" 2>&1
  "$bin/gpu_attention_chunks_test_$v" 32768 >>"$tests" 2>&1
done
declare -A ms
for v in v0 $builds; do
  echo "== attention alone, $v" >>"$bench"
  "$bin/long_prefill_$v" --attention-only 1 --sizes 4096,32768 --narrow-up-to 0 >"$out/a.txt" 2>&1
  cat "$out/a.txt" >>"$bench"
  ms[$v]=$(awk '$1 == 32768 {print $2}' "$out/a.txt")
done
best=$(for v in $builds; do echo "${ms[$v]} $v"; done | sort -g | head -1 | cut -d' ' -f2)
echo "== TTFT, v0" >>"$bench"
"$bin/long_prefill_v0" --sizes 4096,8192,16384,32768 --narrow-up-to 0 >>"$bench" 2>&1
echo "== TTFT, $best" >>"$bench"
"$bin/long_prefill_$best" --sizes 4096,8192,16384,32768,131072 >>"$bench" 2>&1
rm -f "$out/a.txt"
grep -E "PASSED|FAILED|Failure" "$out/cuda_model_test.txt" | tail -4
grep -E "^== |PASSED|FAILED|failure|differ|error" "$tests"
for v in v0 $builds; do echo "attention alone at 32K, $v: ${ms[$v]} ms"; done
grep -v '^\s*$' "$bench" | sed -n '/== TTFT, v0/,$p'
