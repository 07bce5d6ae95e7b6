#!/usr/bin/env python3
# Makes the tokenizer conformance corpus: >= 10,000 seeded strings (tests/fixtures/tokenizer/
# corpus.json) and, per tokenizer.json, the ids and decodes of HF `tokenizers` (corpus_NAME.json).
"""Usage: tools/make_tokenizer_corpus.py [SHARED_DIR] [OUT_DIR]

SHARED_DIR defaults to ../shared (holding tokenizers/{qwen3,llama3}/tokenizer.json); OUT_DIR to
tests/fixtures/tokenizer. Needs `pip install tokenizers` (made with 0.23.3); the C++ test needs no
Python. The strings come from a fixed seed, so re-running gives the same files.

Each ids file holds, per string, the ids `Tokenizer.encode(s)` gives (add_special_tokens=True, as
transformers calls it by default) as one space-separated string, and the strings where
`decode(ids, skip_special_tokens=False)` is not the input itself, keyed by index.
"""
import json
import os
import random
import sys
import unicodedata

SEED = 20250611
N_STRINGS = 12000

WORDS = ("the of and to in is was that for it with as his on be at by I this had not are but from "
         "or have an they which one you were her all she there would their we him been has when who "
         "will more no if out so said what up its about into than them can only other new some "
         "could time these two may then do first any my now such like our over man me even most "
         "made after also did many before must through back years where much your way well down "
         "should because each just those people Mr how too little state good very make world still "
         "own see men work long get here between both life being under never day same another know "
         "while last might us great old year off come since against go came right used take three "
         "Tokenizer HTTP GPU JSON McDonald's iPhone OpenAI naïve café résumé coöperate").split()
SCRIPTS = [
    "你好，世界！今天天气很好。我们一起去公园散步吧。", "日本語のテキストです。カタカナとひらがな、漢字。",
    "한국어 문장입니다. 안녕하세요, 만나서 반갑습니다.", "مرحبا بالعالم، كيف حالك اليوم؟",
    "Привет, мир! Как дела? Съешь же ещё этих мягких французских булок.",
    "नमस्ते दुनिया, आप कैसे हैं? यह हिंदी है।", "স্বাগতম বাংলা ভাষায়", "வணக்கம் உலகம்",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ", "Γειά σου Κόσμε, ξεσκεπάζω την ψυχοφθόρα βδελυγμία",
    "שלום עולם, מה שלומך?", "Xin chào thế giới, tiếng Việt có dấu", "Zwölf Boxkämpfer jagen Viktor "
    "quer über den großen Sylter Deich", "Ça va? Où est la bibliothèque? Très bien, merci.",
    "¿Dónde está el baño? ¡Hola, señor Muñoz!", "İstanbul'da ılık bir gün, ĞÜŞİÖÇ ğüşıöç",
    "ქართული ენა ლამაზია", "Հայերեն լեզու", "ᚠᛇᚻ᛫ᛒᛦᚦ᛫ᚠᚱᚩᚠᚢᚱ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝐁𝐨𝐥𝐝",
    "ኢትዮጵያ አማርኛ", "ᠮᠣᠩᠭᠣᠯ ᠬᠡᠯᠡ", "ລາວ ພາສາ", "ខ្មែរ ភាសា", "မြန်မာ ဘာသာ", "ꦗꦮ",
    "Ελληνικά και ẞ ß Straße ΣΊΣΥΦΟΣ", "Ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ　１２３", "ﬁﬂ ligatures ① ㈱ ㎏ ™ ½",
    "Ǆ ǅ ǆ ǈ Å Ω K", "ｶﾀｶﾅ ﾊﾝｶｸ", "ㄱㄴㄷ ᄀᄁ ퟻ", "🄰🄱 Ⓐⓑ ⒜",
]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷", "🇯🇵", "🤖", "✨", "🧑🏿‍💻", "1️⃣", "🫠", "☕",
         "👩‍❤️‍💋‍👨", "🏴‍☠️", "🐈‍⬛", "👁️‍🗨️", "🙂", "🔥🔥🔥", "©️", "#️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🫶🏻"]
CODE = [
    "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "#include <stdio.h>\nint main() { printf(\"hi\\n\"); }", "const x = await fetch(`/api/${id}`);",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;", "if x != None and y <= 3:",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }", "<div class=\"a\">&nbsp;</div>",
    "    \tindented\ttabs\t\t", "λx.x + 1 // lambda", "arr[::2] = [i**2 for i in range(10)]",
    "git commit -m 'fix: don't crash'", "{\"key\": [1, 2.5e-3, null, true]}", "x=>x?.y??z",
    "template <typename T>\nstd::vector<T> v{};\n", "$ ls -la | grep '^d' > /dev/null 2>&1",
    "\\begin{equation} E = mc^2 \\end{equation}", "# Title\n\n- item\n- **bold** _it_\n",
    "a+=1;b-=2;c*=3;d/=4;e%=5;f**=6", "0x7fffffff 0b1010 1e-9 3.14159 -0.0 1_000_000",
    "https://example.com/path?q=1&r=%20#frag", "user@example.org", "C:\\Users\\me\\file.txt",
    "    if (a) {\n        b();\n    }\n\n\n", "\r\nline1\r\nline2\r\n",
]
SPECIAL_LIKE = [
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
    "</tool_call>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
    "<|end_header_id|>", "<|fim_prefix|>", "<|reserved_special_token_5|>", "<|im_start", "im_end|>",
    "<|im_end |>", "< |endoftext| >", "<think >", "<<think>>", "<|IM_END|>", "<|endoftext|",
    "|>", "<|", "<s>", "</s>", "[INST]", "<|python_tag|>", "<|vision_start|>", "<tool_response>",
]
WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000", "\u2003", " \n ",
              "\t\t", "      ", "\n \n", "\u200b", "\u2028", "\x0b", "\x0c", "\u0085"]
ODD = ["\x00", "\x7f", "\u200d", "\ufeff", "\u00ad", "\u2060", "\ue000", "\ufffd", "\U0010fffd",
       "\u0300", "\u20dd", "\ufe0f", "'", "''", "'s", "'S", "'LL", "'re", "'Ve", "n't"]
PUNCT = list(".,;:!?-—–…()[]{}<>\"'`~@#$%^&*_+=|\\/«»„“”‘’¿¡·•")


def nfd(s):
    return unicodedata.normalize("NFD", s)


def piece(r):
    """One random fragment of some kind."""
    k = r.random()
    if k < 0.25:
        return " ".join(r.choice(WORDS) for _ in range(r.randint(1, 8)))
    if k < 0.38:
        s = r.choice(SCRIPTS)
        a = r.randint(0, len(s) - 1)
        return s[a:a + r.randint(1, 40)]
    if k < 0.46:
        return "".join(r.choice(EMOJI) for _ in range(r.randint(1, 3)))
    if k < 0.56:
        return r.choice(CODE)
    if k < 0.62:
        return "".join(r.choice("0123456789") for _ in range(r.randint(1, 40)))
    if k < 0.70:
        return r.choice(SPECIAL_LIKE)
    if k < 0.78:
        return "".join(r.choice(WHITESPACE) for _ in range(r.randint(1, 4)))
    if k < 0.84:
        return r.choice(ODD)
    if k < 0.90:
        return "".join(r.choice(PUNCT) for _ in range(r.randint(1, 5)))
    if k < 0.95:
        # Decomposed or compatibility forms, which NFC normalizers recompose or keep.
        return nfd(r.choice(["café résumé naïve", "Ångström", "Ελληνικά", "Tiếng Việt", "한국어",
                             "Œuvre ñandú", "ḱṷṓn", r.choice(SCRIPTS)]))
    # Random code points from assorted blocks.
    blocks = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x590, 0x6ff),
              (0x900, 0x97f), (0xe00, 0xe7f), (0x1100, 0x11ff), (0x2000, 0x206f), (0x2190, 0x22ff),
              (0x3040, 0x30ff), (0x4e00, 0x9fff), (0xac00, 0xd7a3), (0xff00, 0xffef),
              (0x1f300, 0x1faff), (0x20000, 0x2a6df)]
    out = []
    for _ in range(r.randint(1, 12)):
        lo, hi = r.choice(blocks)
        out.append(chr(r.randint(lo, hi)))
    return "".join(out)


def make_strings():
    r = random.Random(SEED)
    strings = []
    seen = set()
    fixed = [
        "", " ", "  ", "\n", "Hello world", " Hello world", "Hello World!", "1234567890123456789",
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<think>\n\n</think>\n\n",
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    ]
    for s in fixed + [nfd(s) for s in SCRIPTS]:
        if s not in seen:
            seen.add(s)
            strings.append(s)
    while len(strings) < N_STRINGS:
        n = r.choice([1, 1, 2, 2, 3, 4, 6, 10])
        sep = r.choice(["", "", " ", "\n", r.choice(WHITESPACE)])
        s = sep.join(piece(r) for _ in range(n))
        if r.random() < 0.05:
            s = s * r.randint(2, 5)  # repetitions make long runs
        if s not in seen:
            seen.add(s)
            strings.append(s)
    return strings


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else "../shared"
    out_dir = sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures/tokenizer"
    from tokenizers import Tokenizer, __version__

    strings = make_strings()
    with open(os.path.join(out_dir, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump({"seed": SEED, "strings": strings}, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    for name in ["qwen3", "llama3"]:
        tok = Tokenizer.from_file(os.path.join(shared, "tokenizers", name, "tokenizer.json"))
        ids, decoded = [], {}
        for i, enc in enumerate(tok.encode_batch(strings, add_special_tokens=True)):
            ids.append(" ".join(map(str, enc.ids)))
            text = tok.decode(enc.ids, skip_special_tokens=False)
            if text != strings[i]:
                decoded[str(i)] = text
        with open(os.path.join(out_dir, f"corpus_{name}.json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizers": __version__, "ids": ids, "decoded": decoded}, f,
                      ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        print(name, len(ids), "strings,", len(decoded), "decode differently", file=sys.stderr)


if __name__ == "__main__":
    main()
