#!/usr/bin/env bash
# A served mix on the H200: `tensorfold serve` at its default sizes on random Llama-3.1-8B weights,
# 4 requests of 30,000-token prompts decoding while 64 short ones (64-token prompts) arrive beside
# them, so short chunks share steps with long prefills and long decode rows (the eager steps whose
# split rows are kept within the reserved partials); then bench/serve_load.py at 1, 16 and 64
# streams of new 512-token prompts. Every load must end with every request answered and the
# server still up. Extra serve flags go in SERVE_ARGS; TF_CUDA_* variables pass through.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_mix_h200.sh PACK OUT
#   PACK: as run_rows_h200.sh's, with pack/bin/tensorfold and pack/tok (the Llama 3
#   tokenizer.json and tokenizer_config.json).
set -uo pipefail
pack=$1
out=$2
root=/tmp/mix_bins
model=/tmp/llama31-8b
port=18080
url=http://127.0.0.1:$port/v1
mkdir -p "$out"
source bench/gpu/unpack.sh
"$p"/bin/tensorfold serve "$model" --backend cuda --port $port --threads 8 ${SERVE_ARGS:-} \
  >"$out/serve.txt" 2>&1 &
pid=$!
until curl -sf http://127.0.0.1:$port/health >/dev/null; do
  kill -0 $pid 2>/dev/null || { echo "the server exited"; tail -5 "$out/serve.txt"; exit 1; }
  sleep 0.5
done
grep -h 'serving' "$out/serve.txt"
load() {  # name, serve_load flags...
  local name=$1
  shift
  timeout 240 python3 bench/serve_load.py "$url" --vocab 128000 --no-warmup "$@" \
    >"$out/load_$name.txt" 2>&1
  echo "== $name (exit $?)"
  grep -vE '^\s*$' "$out/load_$name.txt" | tail -4
}
load long -c 4 -n 4 --prompt 30000 --gen 256 --first-prompt 500 &
long=$!
sleep 3
load short -c 32 -n 64 --prompt 64 --gen 32 --first-prompt 600
wait $long
kill -0 $pid 2>/dev/null && echo "server up after the mix" || echo "SERVER DOWN after the mix"
first=1000
for c in 1 16 64; do
  first=$((first + 1000))
  load "streams_$c" -c $c -n $c --prompt 512 --gen 128 --first-prompt $first
done
kill -0 $pid 2>/dev/null && echo "server up at the end" || echo "SERVER DOWN at the end"
kill -INT $pid
wait $pid
grep -iE "error|out of memory" "$out/serve.txt" | head -5
