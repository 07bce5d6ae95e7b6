#!/usr/bin/env python3
# Makes tests/fixtures/tokenizer/components.json: small tokenizer.json files that exercise each HF
# model, normalizer, pre-tokenizer, decoder and added-token option, with HF `tokenizers`' ids.
"""Usage: tools/make_tokenizer_components.py [OUT_JSON]

Needs `pip install tokenizers` (made with 0.23.3). Each tokenizer is trained on a fixed built-in
text, then stored whole, so the C++ test needs neither Python nor the training to be reproducible.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tokenizer_corpus as corpus_gen  # noqa: E402

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,  # noqa: E402
                        pre_tokenizers, processors, trainers)

TRAIN = [corpus_gen.piece(r) for r in [__import__("random").Random(s) for s in range(3000)]]
TRAIN += corpus_gen.SCRIPTS + corpus_gen.CODE + [" ".join(corpus_gen.WORDS)] * 3
# Unigram keeps every character seen in training, so it learns only from English and code: the
# other scripts then exercise byte fallback.
TRAIN_ASCII = corpus_gen.CODE + [" ".join(corpus_gen.WORDS[i:i + 7]) for i in range(0, 300, 3)]


def cases():
    strings = corpus_gen.make_strings()[:250]
    strings += ["Hello [MASK] world", "[CLS] a [SEP]", "x<special>y", "a <special> b",
                "word<sw>word", "word <sw> word", "<sw>", "  <ls>  ", "<rs>   tail", "HeLLo <norm>",
                "ÀÉÎÕÜ ﬁ ①", "  padded  ", "1234567 89", "it's 3.14!", "naïve café"]
    return strings


def wordpiece():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=20))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(TRAIN, trainers.WordPieceTrainer(
        vocab_size=600, special_tokens=["[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    return tok


def unigram():
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    tok.decoder = decoders.Metaspace(prepend_scheme="first")
    tok.train_from_iterator(TRAIN_ASCII, trainers.UnigramTrainer(
        vocab_size=400, special_tokens=["<unk>"], unk_token="<unk>"))
    data = json.loads(tok.to_str())
    vocab = [tuple(v) for v in data["model"]["vocab"]]
    low = min(s for _, s in vocab) - 5
    vocab += [(f"<0x{b:02X}>", low) for b in range(256)]
    tok.model = models.Unigram(vocab, unk_id=0, byte_fallback=True)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(prepend_scheme="first")])
    return tok


def bpe_affixes():
    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##",
                               end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(),
                                           normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    tok.train_from_iterator(TRAIN, trainers.BpeTrainer(
        vocab_size=700, special_tokens=["[UNK]"], continuing_subword_prefix="##",
        end_of_word_suffix="</w>"))
    return tok


def bpe_splits():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([
        normalizers.Strip(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.NFKC(),
        normalizers.Replace("ﬁ", "fi")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(behavior="contiguous"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Split(Regex(r"[aeiou]"), behavior="merged_with_next"),
        pre_tokenizers.Split(" ", behavior="merged_with_previous")])
    tok.decoder = decoders.Sequence([decoders.Replace("_", " "), decoders.Strip(" ", 0, 1)])
    tok.train_from_iterator(TRAIN, trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>"]))
    tok.add_tokens([AddedToken("<sw>", single_word=True, normalized=False),
                    AddedToken("<ls>", lstrip=True, normalized=False),
                    AddedToken("<rs>", rstrip=True, normalized=False),
                    AddedToken("<norm>", normalized=True)])
    tok.add_special_tokens([AddedToken("<special>", special=True)])
    tok.post_processor = processors.TemplateProcessing(
        single="<special> $A <unk>", special_tokens=[("<special>", tok.token_to_id("<special>")),
                                                    ("<unk>", tok.token_to_id("<unk>"))])
    return tok


def byte_level_bpe():
    tok = Tokenizer(models.BPE(byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    tok.train_from_iterator(TRAIN, trainers.BpeTrainer(
        vocab_size=800, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/tokenizer/components.json"
    strings = cases()
    result = {"strings": strings, "tokenizers": []}
    for name, make in [("wordpiece", wordpiece), ("unigram", unigram), ("bpe_affixes", bpe_affixes),
                       ("bpe_splits", bpe_splits), ("byte_level_bpe", byte_level_bpe)]:
        tok = make()
        ids, decoded = [], []
        for s in strings:
            e = tok.encode(s)
            ids.append(" ".join(map(str, e.ids)))
            decoded.append(tok.decode(e.ids, skip_special_tokens=False))
        result["tokenizers"].append({"name": name, "json": tok.to_str(), "ids": ids,
                                     "decoded": decoded})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
