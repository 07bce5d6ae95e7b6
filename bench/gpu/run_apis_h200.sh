#!/usr/bin/env bash
# The H200 run behind docs/benchmarks.md's serving tables: a random-weight checkpoint of
# Llama-3.1-8B's shapes with the Llama 3 tokenizer, served once: each API's output tok/s at 16
# streams (bench/serve_load --api, chat first and last), /metrics scraped every 100 ms at 64 streams
# beside no scrape (alternated, two pairs); then bench/resume at 32K. Tables last.
# Usage, from the repository root on the H200 machine: bash bench/gpu/run_apis_h200.sh PACK TOK OUT
#   PACK: a .tar.xz of bin/tensorfold built on the development machine and lib/, the shared
#   libraries the H200 image lacks; TOK: a directory with the Llama 3 tokenizer.json and
#   tokenizer_config.json.
set -uo pipefail
pack=$1
tok=$2
out=$3
dir=/tmp/apis_pack
model=/tmp/llama31-8b
port=8090
mkdir -p "$out" "$dir"
tar -xJf "$pack" -C "$dir"
bin=$dir/bin/tensorfold
[ -f "$model/model.safetensors" ] ||
  python3 tools/make_random_checkpoint.py --shape llama31-8b --out "$model" >/dev/null
cp "$tok"/tokenizer.json "$tok"/tokenizer_config.json "$model"/
export LD_LIBRARY_PATH=$dir/lib:${LD_LIBRARY_PATH:-}
# The CUDA runtime and cuBLASLt: the toolkit's, else the ones PyTorch's wheels carry.
for lib in $(ldd "$bin" | awk '/not found/ {print $1}'); do
  found=$(find /usr/local/cuda*/ /usr/lib/python3*/ /usr/local/lib/python3*/ -name "$lib" 2>/dev/null | head -1)
  [ -n "$found" ] && export LD_LIBRARY_PATH=$(dirname "$found"):$LD_LIBRARY_PATH
done
ldd "$bin" | grep "not found" >"$out/missing.txt"

# Drafting off: every stream asks the same greedy conversation, which drafting would learn from
# the first replies and copy, so later runs would measure the drafter, not the API.
"$bin" serve "$model" --backend cuda --port $port --parallel 64 --kv-gib 40 \
  --max-batch-tokens 8192 --no-draft >"$out/server.txt" 2>&1 &
server=$!
for _ in $(seq 240); do
  curl -sf http://127.0.0.1:$port/health >/dev/null && break
  sleep 0.5
done
load() { python3 bench/serve_load.py http://127.0.0.1:$port/v1 --vocab 128000 "$@"; }
apis="chat completions responses messages ws"
# Chat first and last: its two runs show the noise the other APIs' differences stand against.
for run in $apis chat-again; do
  api=${run%-again}
  if [ "$api" = ws ]; then flags=(--api responses --ws); else flags=(--api "$api"); fi
  load -c 16 -n 48 --prompt 512 --gen 256 "${flags[@]}" >"$out/api_$run.txt" 2>&1
done
for pass in 1 2; do
  [ "${SKIP_SCRAPE:-}" ] && break
  load -c 64 -n 128 --prompt 512 --gen 256 >"$out/scrape_off_$pass.txt" 2>&1
  load -c 64 -n 128 --prompt 512 --gen 256 --scrape 0.1 >"$out/scrape_on_$pass.txt" 2>&1
done
kill $server
wait $server
[ "${SKIP_RESUME:-}" ] || timeout 150 python3 bench/resume.py --bin "$bin" --model "$model" --backend cuda --context 32768 \
  --turns 20 --measure 20 --max-batch-tokens 8192 >"$out/resume.txt" 2>&1

tps() { awk -F'|' '/output token throughput/ {gsub(/ /, "", $3); print $3}' "$1"; }
echo "| run | output tok/s |"
echo "|---|---:|"
for run in $apis chat-again; do echo "| $run, 16 streams | $(tps "$out/api_$run.txt") |"; done
for m in off on; do
  echo "| 64 streams, scrape $m | $(tps "$out/scrape_${m}_1.txt") / $(tps "$out/scrape_${m}_2.txt") |"
done
grep -h "metrics\|failed" "$out"/scrape_on_*.txt
cat "$out/resume.txt" | tail -8
