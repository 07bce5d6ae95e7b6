#!/usr/bin/env bash
# The H200 run behind docs/benchmarks.md's "The server's sizes by backend": `tensorfold serve` on
# random Llama-3.1-8B weights with no sizing flags (the GPU's defaults) and with the CPU's sizes
# (the defaults before), each under bench/serve_load.py at 16 and 64 streams of new prompts.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_sizes_h200.sh BIN OUT
#   BIN: tensorfold built on the development machine, lib/ beside (the shared libraries the H200
#   image lacks) and tok/ (the Llama 3 tokenizer.json and tokenizer_config.json).
set -uo pipefail
bin=$1
out=$2
model=/tmp/llama31-8b
port=18080
mkdir -p "$out"
export LD_LIBRARY_PATH=$bin/lib:${LD_LIBRARY_PATH:-}
[ -f "$model/config.json" ] ||
  python3 tools/make_random_checkpoint.py --shape llama31-8b --out "$model" >/dev/null
cp "$bin"/tok/tokenizer.json "$bin"/tok/tokenizer_config.json "$model"/
first=1000
# serve with the given flags until /health answers (or it exits), run the loads, stop it.
serve_and_load() {  # name, serve flags...
  local name=$1
  shift
  "$bin"/tensorfold serve "$model" --backend cuda --port $port --threads 8 "$@" \
    >"$out/serve_$name.txt" 2>&1 &
  local pid=$!
  until curl -sf http://127.0.0.1:$port/health >/dev/null; do
    kill -0 $pid 2>/dev/null || { echo "== $name: the server exited"; tail -3 "$out/serve_$name.txt"; return; }
    sleep 0.5
  done
  grep -h 'serving' "$out/serve_$name.txt"
  for c in 16 64; do
    first=$((first + 1000))
    timeout 120 python3 bench/serve_load.py "http://127.0.0.1:$port/v1" -c $c -n $c --prompt 512 \
      --gen 128 --vocab 128000 --first-prompt $first >"$out/load_${name}_$c.txt" 2>&1
    echo "== $name, $c streams"
    grep -vE '^\s*$' "$out/load_${name}_$c.txt" | tail -4
  done
  kill -INT $pid
  wait $pid
}
serve_and_load defaults
serve_and_load cpu_sizes --parallel 16 --max-batch-tokens 256 --kv-gib 1
