#!/usr/bin/env bash
# The H200 run that decides the decoder's prefill kernels: the warp-specialized wgmma attention
# kernel against the mma.sync wide kernel, and the prefill matmuls (cuBLASLt by parts against
# wgmma_matmul). Correctness first (wgmma's k16 chains against mma.sync's, the matmuls' bits,
# every attention launch shape with both kernels, 32K positions whole = chunked = decode splits,
# the fixtures on CUDA), then prefill attention alone and TTFT side by side in one program (their
# logits compared bit for bit), the matmuls' TFLOP/s, then the engine's prompt tok/s with each
# attention kernel (TF_CUDA_PREFILL_KERNEL), and with the wgmma matmuls (TF_CUDA_PREFILL_GEMM);
# a table last.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_prefill_kernels_h200.sh
#   PACK OUT. PACK: a .tar.xz of pack/bin (mma_order_probe, gpu_test, gpu_attention_test,
#   gpu_attention_chunks_test, long_prefill, prefill_gemm, cuda_model_test, engine_throughput,
#   built on the development machine; optionally long_prefill_old, the same program built from the
#   commit before, for the before column and its logits' hashes) and pack/lib (the shared libraries
#   the H200 image lacks). PARTS (default "check time engine") picks which of the parts run, so
#   that a run can be split over calls of a few minutes each; PARTS with "verify" also runs the
#   pack's verify_oracle (the draft issue's verify cost curve at 1, 8 and 32 rows).
set -uo pipefail
pack=$1
out=$2
parts=${PARTS:-check time engine}
root=/tmp/prefill_bins
mkdir -p "$out" "$root"
tar -xJf "$pack" -C "$root"
b=$root/pack/bin
cu_lib=$(python3 -c "import nvidia,os;print(os.path.join(nvidia.__path__[0],'cu13','lib'))")
export LD_LIBRARY_PATH=$root/pack/lib:$cu_lib:${LD_LIBRARY_PATH:-} TF_SOURCE_DIR=$PWD
check() {  # name, seconds, command...
  local name=$1 secs=$2
  shift 2
  timeout "$secs" "$@" >"$out/$name.txt" 2>&1
  echo "== $name: exit $? | $(grep -E 'passed|PASSED|FAILED|differ|error' "$out/$name.txt" | tail -1)"
}
checkpoint() {  # random Llama-3.1-8B weights at /tmp/llama31-8b, once
  [ -f /tmp/llama31-8b/config.json ] ||
    python3 tools/make_random_checkpoint.py --shape llama31-8b --out /tmp/llama31-8b >/dev/null
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
if [[ $parts == *check* ]]; then
  timeout 60 "$b/mma_order_probe" --wgmma >"$out/probe.txt" 2>&1
  grep "(4" "$out/probe.txt" | tail -4
  check gpu_test 300 "$b/gpu_test"
  check attention 120 "$b/gpu_attention_test"
  check chunks 120 "$b/gpu_attention_chunks_test" 32768
  TF_CUDA_PREFILL_KERNEL=wgmma check cuda_model_test 200 "$b/cuda_model_test"
  TF_CUDA_PREFILL_GEMM=wgmma check cuda_model_test_gemm 200 "$b/cuda_model_test"
fi
if [[ $parts == *time* ]]; then
  timeout 150 "$b/long_prefill" --compare wgmma --attention-only 1 --sizes 4096,8192,32768 \
    >"$out/attention_only.txt" 2>&1
  timeout 200 "$b/long_prefill" --compare wgmma --sizes 4096,8192,16384,32768 \
    >"$out/ttft.txt" 2>&1
  if [ -x "$b/long_prefill_old" ]; then
    timeout 100 "$b/long_prefill_old" --compare wgmma --attention-only 1 --sizes 4096,8192,32768 \
      >"$out/attention_only_old.txt" 2>&1
    timeout 150 "$b/long_prefill_old" --sizes 4096,8192,32768 >"$out/ttft_old.txt" 2>&1
fi
timeout 200 "$b/prefill_gemm" >"$out/prefill_gemm.txt" 2>&1
fi
if [[ $parts == *engine* ]]; then
  checkpoint
  for k in wide wgmma wgmma+gemm; do
    TF_CUDA_PREFILL_KERNEL=${k%+gemm} TF_CUDA_PREFILL_GEMM=$([ "$k" = wgmma+gemm ] && echo wgmma) \
      timeout 240 "$b/engine_throughput" /tmp/llama31-8b --backend cuda \
      --threads 8 -c 1 --prompt 512 --gen 16 --kv-gib 40 --max-batch-tokens 8192 \
      --prefill 4096 --prefill 32768 >"$out/engine_$k.txt" 2>&1
  done
fi
if [[ $parts == *verify* ]]; then
  checkpoint
  timeout 240 "$b/verify_oracle" /tmp/llama31-8b --backend cuda --rows 1,8,32 --max-k 8 \
    >"$out/verify.txt" 2>&1
  echo "== verify cost (verify_oracle)"
  grep '^|' "$out/verify.txt"
fi
echo "== prefill attention alone (wide, then wgmma in the compare columns)"
grep -v '^\s*$' "$out/attention_only.txt" 2>/dev/null | tail -5
echo "== TTFT (logits: same = bitwise equal)"
grep -v '^\s*$' "$out/ttft.txt" 2>/dev/null | tail -6
for f in attention_only_old ttft_old; do
  [ -f "$out/$f.txt" ] && echo "== $f (the commit before)" && grep -v '^\s*$' "$out/$f.txt" | tail -5
done
echo "== prefill matmuls (cuBLASLt by parts, wgmma_matmul; bits: same = bitwise equal)"
grep '^|' "$out/prefill_gemm.txt" 2>/dev/null
for k in wide wgmma wgmma+gemm; do
  echo "== engine, $k"
  grep -iE "prefill|prompt" "$out/engine_$k.txt" 2>/dev/null | tail -3
done
