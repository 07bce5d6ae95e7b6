#!/usr/bin/env bash
# End-to-end checks of the tensorfold binary: info on real checkpoints, run output and speed line,
# and refusals (wrong path, unsupported architecture) that name the problem before weights load.
set -u
bin=$1
source "$(dirname "$0")/lib.sh"

if [ -f "$shared/models/stories260K.gguf" ]; then
  "$bin" info "$shared/models/stories260K.gguf" >"$tmp/info" 2>&1
  check "info exits 0" test $? -eq 0
  check "info names the architecture" grep -q "architecture:  llama" "$tmp/info"
  check "info lists f32 weights" grep -q "f32" "$tmp/info"
  check "info names the tokenizer kind" grep -q "^tokenizer:  *spm" "$tmp/info"
  "$bin" run "$shared/models/stories260K.gguf" -p "Once upon a time" -n 60 --threads 1 \
    >"$tmp/run" 2>"$tmp/run.err"
  check "run exits 0" test $? -eq 0
  check "run continues the story" test "$(tail -c 54 "$tmp/run")" = "$(printf 'She wanted to play with it, but it was too high.\nLily')"
  check "run reports tok/s" grep -Eq "prompt: 5 tokens, [0-9.]+ tok/s \| generation: 60 tokens" "$tmp/run.err"
  # Concurrent prompts through the engine give exactly what each gives alone.
  printf 'Once upon a time\nThe dog\nLily and Tom went\n' >"$tmp/prompts"
  "$bin" run "$shared/models/stories260K.gguf" --prompts "$tmp/prompts" --parallel 3 -n 40 \
    --temperature 0.8 >"$tmp/par" 2>"$tmp/par.err"
  check "parallel run exits 0" test $? -eq 0
  check "parallel run reports aggregate tok/s" grep -q "tok/s aggregate" "$tmp/par.err"
  i=0
  while IFS= read -r p; do
    i=$((i + 1))
    "$bin" run "$shared/models/stories260K.gguf" -p "$p" -n 40 --temperature 0.8 >"$tmp/solo" 2>/dev/null
    awk -v n="$i" '/^### /{on = ($2 == n); next} on' "$tmp/par" >"$tmp/par.$i"
    check "parallel prompt $i equals its solo run" cmp -s "$tmp/solo" "$tmp/par.$i"
  done <"$tmp/prompts"
else
  echo "SKIP: $shared/models/stories260K.gguf missing"
fi
if [ -d "$shared/models/tinystories-656k" ]; then
  "$bin" info "$shared/models/tinystories-656k" >"$tmp/info2" 2>&1
  check "info on an HF directory" grep -q "Hugging Face safetensors" "$tmp/info2"
  check "info sees tied embeddings" grep -q "tied embed:    yes" "$tmp/info2"
fi

"$bin" run /nonexistent/model.gguf -p hi >"$tmp/out" 2>&1
check "wrong path fails" test $? -ne 0
check "wrong path is named" grep -q "/nonexistent/model.gguf" "$tmp/out"

# An HF directory whose architecture no family implements, with an empty safetensors file:
# refused by architecture name, which proves no weights were needed to decide.
mkdir -p "$tmp/falcon"
cat >"$tmp/falcon/config.json" <<'JSON'
{"architectures": ["FalconForCausalLM"], "model_type": "falcon", "hidden_size": 64,
 "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
 "num_key_value_heads": 4, "vocab_size": 100, "max_position_embeddings": 128}
JSON
printf '\x02\x00\x00\x00\x00\x00\x00\x00{}' >"$tmp/falcon/model.safetensors"
"$bin" run "$tmp/falcon" -p hi >"$tmp/out" 2>&1
check "unsupported architecture fails" test $? -ne 0
check "unsupported architecture is named" grep -q "FalconForCausalLM" "$tmp/out"

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
