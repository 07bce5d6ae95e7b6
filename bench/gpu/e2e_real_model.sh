#!/usr/bin/env bash
# End to end on the GPU with a real model (../shared/models/tinystories-656k, carried next to the
# binaries): `tensorfold run` greedy on the CPU and on CUDA for 4 prompts as 4 concurrent streams,
# then each prompt alone on CUDA. Prints both texts and whether the CUDA streams equal their solo
# runs (they must, byte for byte); then the same sampled (T 0.8, top_p 0.95, seed 7, drawn on the
# device): 4 streams in overlapped steps against plain steps (TF_CUDA_OVERLAP=0) and against each
# prompt alone. Usage on the H200, from the repository root:
#   bash bench/gpu/e2e_real_model.sh CARRY_DIR    # CARRY_DIR: tensorfold, prompts.txt, models/
set -u
b=$1
m=$b/models/tinystories-656k
out=$(mktemp -d)
"$b"/tensorfold run "$m" --prompts "$b"/prompts.txt --parallel 4 -n 48 --backend cpu \
  2>/dev/null >"$out"/cpu.txt
"$b"/tensorfold run "$m" --prompts "$b"/prompts.txt --parallel 4 -n 48 --backend cuda \
  2>"$out"/cuda.err >"$out"/cuda.txt
: >"$out"/solo.txt
i=1
while read -r p; do
  echo "### $i" >>"$out"/solo.txt
  "$b"/tensorfold run "$m" -p "$p" -n 48 --backend cuda 2>/dev/null >>"$out"/solo.txt
  echo >>"$out"/solo.txt
  i=$((i + 1))
done <"$b"/prompts.txt
echo "== cuda (4 streams)"; cat "$out"/cuda.txt; tail -2 "$out"/cuda.err
echo "== cpu (4 streams)"; cat "$out"/cpu.txt
echo "== cuda 4 streams vs cuda solo:"
diff <(grep -v '^$' "$out"/cuda.txt) <(grep -v '^$' "$out"/solo.txt) && echo IDENTICAL
S="--temperature 0.8 --top-p 0.95 --seed 7"
"$b"/tensorfold run "$m" --prompts "$b"/prompts.txt --parallel 4 -n 48 --backend cuda $S \
  2>"$out"/sampled.err >"$out"/sampled.txt
TF_CUDA_OVERLAP=0 "$b"/tensorfold run "$m" --prompts "$b"/prompts.txt --parallel 4 -n 48 \
  --backend cuda $S 2>/dev/null >"$out"/sampled_plain.txt
: >"$out"/sampled_solo.txt
i=1
while read -r p; do
  echo "### $i" >>"$out"/sampled_solo.txt
  "$b"/tensorfold run "$m" -p "$p" -n 48 --backend cuda $S 2>/dev/null >>"$out"/sampled_solo.txt
  echo >>"$out"/sampled_solo.txt
  i=$((i + 1))
done <"$b"/prompts.txt
echo "== cuda sampled (4 streams)"; cat "$out"/sampled.txt; tail -2 "$out"/sampled.err
echo "== sampled: overlapped vs plain steps, and vs solo:"
diff <(grep -v '^$' "$out"/sampled.txt) <(grep -v '^$' "$out"/sampled_plain.txt) && echo IDENTICAL
diff <(grep -v '^$' "$out"/sampled.txt) <(grep -v '^$' "$out"/sampled_solo.txt) && echo IDENTICAL
