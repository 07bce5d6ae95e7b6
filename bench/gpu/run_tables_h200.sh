#!/usr/bin/env bash
# The load issue's three tables on one GPU (an H200, or an H100 where that is what is lent), each
# figure beside its floor and beside the previous run's: engine_throughput at 1-256 streams
# (decode tok/s against the weights' and K/V's copy-rate floor), long_prefill at 8K-128K (TTFT and
# MFU against cuBLASLt's measured rate), and serve_load at 1 / 16 / 64 / 128 streams against the
# engine's rate for the same work. Result files (bench/results.h's format) land in OUT; pass a
# folder of an earlier run's as PREVIOUS to print the changes.
# Usage, from the repository root on the GPU machine: bash bench/gpu/run_tables_h200.sh PACK OUT
#   [PREVIOUS]; PACK: as run_mix_h200.sh's, with engine_throughput and long_prefill in pack/bin.
#   STREAMS (engine levels, default "1 16 64 128 256") and SIZES (prompt lengths, default
#   8192,16384,32768,65536,131072) shorten a run. SHAPE, LAYERS and TOK (unpack.sh) take another
#   model's shapes, VOCAB its prompt ids' range; long_prefill runs for Llama-3.1-8B's only.
set -uo pipefail
pack=$1
out=$2
prev=${3:-/nonexistent}
root=/tmp/table_bins
model=/tmp/${SHAPE:-llama31-8b}
port=18080
url=http://127.0.0.1:$port/v1
mkdir -p "$out"
source bench/gpu/unpack.sh
nvidia-smi --query-gpu=name --format=csv,noheader

echo "== engine_throughput"
levels=()
for c in ${STREAMS:-1 16 64 128 256}; do levels+=(-c "$c"); done
"$p"/bin/engine_throughput "$model" --backend cuda --threads 8 "${levels[@]}" \
  --prompt 512 --gen 128 --kv-gib 40 --max-batch-tokens 8192 --no-draft \
  --save "$out/engine.txt" --previous "$prev/engine.txt" 2>&1 | grep -E '^\||copy rate|error'

if [ "${SHAPE:-llama31-8b}" = llama31-8b ]; then
  echo "== long_prefill"
  "$p"/bin/long_prefill --sizes "${SIZES:-8192,16384,32768,65536,131072}" --compare wgmma \
    --narrow-up-to 32768 --save "$out/prefill.txt" --previous "$prev/prefill.txt" 2>&1 |
    grep -vE '^\s*$'
fi

echo "== serve_load"
"$p"/bin/tensorfold serve "$model" --backend cuda --port $port --threads 8 --parallel 256 \
  --kv-gib 40 --max-batch-tokens 8192 --no-draft >"$out/serve.txt" 2>&1 &
pid=$!
for ((i = 0; i < 240; ++i)); do  # up to two minutes for the weights to load
  curl -sf http://127.0.0.1:$port/health >/dev/null && break
  kill -0 $pid 2>/dev/null || { echo "the server exited"; tail -5 "$out/serve.txt"; exit 1; }
  sleep 0.5
done
curl -sf http://127.0.0.1:$port/health >/dev/null ||
  { echo "the server never became healthy"; kill $pid; exit 1; }
first=1000
for c in 1 16 64 128; do
  first=$((first + 1000))  # prompts the server has not seen: no prompt-cache hits
  echo "-- $c streams"
  timeout 240 python3 bench/serve_load.py "$url" --vocab "${VOCAB:-128000}" --no-warmup -c $c -n $c \
    --prompt 512 --gen 128 --first-prompt $first --save "$out/serve_$c.txt" \
    --previous "$prev/serve_$c.txt" --engine "$out/engine.txt" 2>&1 |
    grep -E 'output token|engine|TTFT|TPOT|successful|failed|error|Traceback'
done
kill -0 $pid 2>/dev/null && echo "server up at the end" || echo "SERVER DOWN at the end"
kill -INT $pid
wait $pid
