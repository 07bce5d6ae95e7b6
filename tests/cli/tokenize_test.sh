#!/usr/bin/env bash
# End-to-end checks of `tensorfold tokenize`: ids of a GGUF vocabulary, a chat rendered by a bare
# tokenizer directory's template and its ids, --json output, and refusals that name the problem.
set -u
bin=$1
source "$(dirname "$0")/lib.sh"

if [ -f "$shared/models/stories260K.gguf" ]; then
  "$bin" tokenize "$shared/models/stories260K.gguf" "Once upon a time" >"$tmp/ids" 2>&1
  check "tokenize exits 0" test $? -eq 0
  check "tokenize gives the ids" test "$(head -1 "$tmp/ids")" = "1 403 407 261 378"
  check "tokenize lists one piece per token" test "$(wc -l <"$tmp/ids")" -eq 6
  check "pieces show stored text and bytes" grep -Eq '^ +403 +"▁Once" +" Once"$' "$tmp/ids"
  "$bin" tokenize "$shared/models/stories260K.gguf" "Once upon a time" --no-special >"$tmp/ids"
  check "--no-special drops BOS" test "$(head -1 "$tmp/ids")" = "403 407 261 378"
else
  echo "SKIP: $shared/models/stories260K.gguf missing"
fi

qwen=$shared/tokenizers/qwen3
if [ -f "$qwen/tokenizer.json" ]; then
  cat >"$tmp/chat.json" <<'JSON'
{"messages": [{"role": "system", "content": "You are terse."},
              {"role": "user", "content": "Hi\tthere"}],
 "add_generation_prompt": true, "chat_template_kwargs": {"enable_thinking": false}}
JSON
  "$bin" tokenize "$qwen" --chat "$tmp/chat.json" >"$tmp/chat" 2>&1
  check "chat exits 0" test $? -eq 0
  check "chat renders the user turn" grep -q "^<|im_start|>user$" "$tmp/chat"
  check "chat renders thinking off" grep -qz $'<think>\n\n</think>' "$tmp/chat"
  ids=$(sed -n '/^--- [0-9]* tokens ---$/{n;p;q}' "$tmp/chat")
  check "chat ids include <|im_start|>" grep -qw 151644 <<<"$ids"
  check "chat ids have no BOS added" test "${ids%% *}" = 151644

  "$bin" tokenize "$qwen" --chat "$tmp/chat.json" --json >"$tmp/chat.jsonout" 2>&1
  check "--json parses" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ids"][0] == 151644 and len(d["ids"]) == len(d["pieces"])
assert "<think>\n\n</think>" in d["prompt"] and d["pieces"][0]["token"] == "<|im_start|>"
' "$tmp/chat.jsonout"
  # A bare tokenizer.json file; --raw keeps special-token text as ordinary text.
  "$bin" tokenize "$qwen/tokenizer.json" "<|im_end|>" --json >"$tmp/special" 2>&1
  check "special text becomes one token" python3 -c '
import json, sys; assert json.load(open(sys.argv[1]))["ids"] == [151645]' "$tmp/special"
  "$bin" tokenize "$qwen/tokenizer.json" "<|im_end|>" --raw --json >"$tmp/raw" 2>&1
  check "--raw splits special text" python3 -c '
import json, sys; assert len(json.load(open(sys.argv[1]))["ids"]) > 1' "$tmp/raw"

  echo '[{"role": "user", "content": ' >"$tmp/bad.json"
  "$bin" tokenize "$qwen" --chat "$tmp/bad.json" >"$tmp/out" 2>&1
  check "bad JSON fails" test $? -eq 1
  check "bad JSON is one named line" \
    test "$(grep -c "$tmp/bad.json: invalid JSON" "$tmp/out")" -eq 1
  mkdir -p "$tmp/badtmpl"
  cp "$qwen/tokenizer.json" "$tmp/badtmpl/"
  echo '{"chat_template": "{{ raise_exception(\"nope\") }}"}' >"$tmp/badtmpl/tokenizer_config.json"
  "$bin" tokenize "$tmp/badtmpl" --chat "$tmp/chat.json" >"$tmp/out" 2>&1
  check "template error fails" test $? -eq 1
  check "template error is reported" grep -q "^error: chat template: .*nope" "$tmp/out"
else
  echo "SKIP: $qwen/tokenizer.json missing"
fi

"$bin" tokenize /nonexistent/model.gguf "hi" >"$tmp/out" 2>&1
check "wrong path fails with 1" test $? -eq 1
check "wrong path is named" grep -q "/nonexistent/model.gguf" "$tmp/out"
check "wrong path is one line" test "$(wc -l <"$tmp/out")" -eq 1

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
