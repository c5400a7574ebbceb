"""CLIP's byte-level BPE tokenizer, offline: text -> (n, 77) token ids, as OpenAI's and open_clip's tokenizers give.

The vocabulary is OpenAI's (49,152 merges; ``bpe_simple_vocab_16e6.txt.gz`` beside this file, MIT, see
VOCAB_LICENSE.md) or a Hugging Face folder's ``vocab.json`` + ``merges.txt`` (the same vocabulary).

Steps, as in CLIP: clean the text (HTML entities, Unicode NFC, curly quotes, full-width forms and Latin
ligatures as ftfy fixes them, whitespace collapsed, lower case); split it into words (contractions, letter
runs, single digits, runs of other symbols, by Unicode category); write each word's UTF-8 bytes as printable
characters, mark its end with ``</w>`` and merge pairs in rank order; then [SOT] + ids + [EOT], truncated to
the context (the last id becomes EOT) and zero-padded. ftfy's mojibake repair is not done: typed prompts
do not need it.
"""
from __future__ import annotations

import gzip
import html
import json
import unicodedata
from functools import cache
from pathlib import Path

import torch

BUNDLED_VOCAB = Path(__file__).with_name("bpe_simple_vocab_16e6.txt.gz")
NUM_MERGES = 49152 - 256 - 2  # merges CLIP uses from the file: the vocabulary is 49,408 ids
CONTEXT_LENGTH = 77
CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")
_FIXES = {  # str.translate table of ftfy's fixes for typed text: curly quotes, widths, ligatures, control chars
    **dict.fromkeys([0x2BC, *range(0x2018, 0x201C)], "'"),                     # ‘ ’ ‚ ‛ ʼ -> '
    **dict.fromkeys(range(0x201C, 0x2020), '"'),                                # “ ” „ ‟ -> "
    **{c: unicodedata.normalize("NFKC", chr(c)) for c in range(0xFF01, 0xFFF0)  # Ａ -> A, ｶ -> カ
       if unicodedata.normalize("NFKC", chr(c)) != chr(c)},
    0x3000: " ",                                                                # ideographic space
    **{ord(c): unicodedata.normalize("NFKC", c) for c in "ĲĳǄǅǆǇǈǉǊǋǌǱǲǳﬀﬁﬂﬃﬄﬅﬆ"},  # Latin ligatures: ﬁ -> fi
    ord("ŉ"): "ʼn",
    **dict.fromkeys([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, *range(0x206A, 0x2070), 0xFEFF,
                     *range(0xFFF9, 0xFFFD)]),                                 # control characters removed
}


@cache
def bytes_to_unicode() -> dict[int, str]:
    """Every byte -> a printable character: printable Latin-1 bytes map to themselves, the other 68 to U+0100…"""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = (b for b in range(256) if b not in printable)
    mapping = {b: chr(b) for b in printable}                   # this order (printable first) is the ids' order
    mapping.update({b: chr(256 + n) for n, b in enumerate(extra)})
    return mapping


def clean(text: str) -> str:
    """What CLIP's tokenizer does before splitting (ftfy.fix_text's fixes for typed text, then lower case)."""
    text = unicodedata.normalize("NFC", html.unescape(text).translate(_FIXES))
    text = html.unescape(html.unescape(text))
    return " ".join(text.split()).lower()


def split_words(text: str) -> list[str]:
    """Cleaned text -> words: a contraction, a run of letters, one digit, or a run of other non-space symbols
    (CLIP's pattern ``'s|'t|'re|'ve|'m|'ll|'d|\\p{L}+|\\p{N}|[^\\s\\p{L}\\p{N}]+``)."""
    def kind(c: str) -> str:
        category = unicodedata.category(c)[0]
        return "space" if c.isspace() else {"L": "letter", "N": "number"}.get(category, "other")

    words, i = [], 0
    while i < len(text):
        contraction = next((c for c in CONTRACTIONS if text.startswith(c, i)), None)
        if contraction:
            words.append(contraction)
            i += len(contraction)
            continue
        k = kind(text[i])
        if k == "space":
            i += 1
            continue
        j = i + 1
        if k != "number":  # digits are words on their own; letters and symbols run on
            while j < len(text) and kind(text[j]) == k:
                j += 1
        words.append(text[i:j])
        i = j
    return words


class Tokenizer:
    """CLIP BPE: ``tokenizer(texts) -> LongTensor (n, context_length)``; ``sot_id`` and ``eot_id`` mark the ends."""

    def __init__(self, encoder: dict[str, int], merges: list[tuple[str, str]], sot: str, eot: str,
                 context_length: int = CONTEXT_LENGTH):
        self.encoder = encoder                                   # token -> id
        self.ranks = {pair: i for i, pair in enumerate(merges)}  # merge -> priority (lower merges first)
        self.sot_id, self.eot_id = encoder[sot], encoder[eot]
        self.context_length = context_length
        self.byte_encoder = bytes_to_unicode()
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def from_bpe_file(cls, path: str | Path = BUNDLED_VOCAB, context_length: int = CONTEXT_LENGTH) -> "Tokenizer":
        """OpenAI's gzipped merges file: ids are the 256 byte characters, the same with ``</w>``, the merges, SOT, EOT."""
        lines = gzip.open(path, "rt", encoding="utf-8").read().split("\n")
        merges = [tuple(line.split()) for line in lines[1:1 + NUM_MERGES]]
        chars = list(bytes_to_unicode().values())
        vocab = chars + [c + "</w>" for c in chars] + ["".join(m) for m in merges] + ["<|startoftext|>",
                                                                                     "<|endoftext|>"]
        return cls({t: i for i, t in enumerate(vocab)}, merges, "<|startoftext|>", "<|endoftext|>", context_length)

    @classmethod
    def from_vocab_files(cls, vocab_json: str | Path, merges_txt: str | Path,
                         context_length: int = CONTEXT_LENGTH) -> "Tokenizer":
        """A Hugging Face CLIP tokenizer's vocab.json (token -> id) and merges.txt (one merge per line)."""
        try:
            encoder = json.loads(Path(vocab_json).read_text(encoding="utf-8"))
            lines = Path(merges_txt).read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"Unreadable CLIP tokenizer files {vocab_json}, {merges_txt}: {e}") from None
        merges = [tuple(line.split()) for line in lines if line and not line.startswith("#version")]
        if not isinstance(encoder, dict) or not {"<|startoftext|>", "<|endoftext|>"} <= set(encoder):
            raise ValueError(f"{vocab_json} is not a CLIP vocabulary: no <|startoftext|> / <|endoftext|> tokens.")
        return cls(encoder, merges, "<|startoftext|>", "<|endoftext|>", context_length)

    def bpe(self, word: str) -> list[str]:
        """One word (its bytes as characters) -> BPE tokens, the last ending in ``</w>``."""
        if word in self._cache:
            return self._cache[word]
        parts = list(word[:-1]) + [word[-1] + "</w>"]
        while len(parts) > 1:
            pair = min(zip(parts, parts[1:]), key=lambda p: self.ranks.get(p, float("inf")))
            if pair not in self.ranks:  # no pair left that the vocabulary merges
                break
            merged, i = [], 0
            while i < len(parts):       # merge every occurrence of the best pair, left to right
                if i < len(parts) - 1 and (parts[i], parts[i + 1]) == pair:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        self._cache[word] = parts
        return parts

    def encode(self, text: str) -> list[int]:
        """Text -> BPE ids without SOT/EOT."""
        ids = []
        for word in split_words(clean(text)):
            chars = "".join(self.byte_encoder[b] for b in word.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(chars))
        return ids

    def __call__(self, texts: str | list[str], context_length: int | None = None) -> torch.Tensor:
        """Texts -> (n, context_length) int64: [SOT, ids…, EOT, 0, …]; too long texts are cut and end in EOT."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        length = context_length or self.context_length
        out = torch.zeros(len(texts), length, dtype=torch.long)
        for row, text in enumerate(texts):
            ids = [self.sot_id] + self.encode(text) + [self.eot_id]
            if len(ids) > length:
                ids = ids[:length - 1] + [self.eot_id]
            out[row, :len(ids)] = torch.tensor(ids)
        return out


@cache
def bundled_tokenizer() -> Tokenizer:
    """The tokenizer of OpenAI's and open_clip's CLIP models, from the vocabulary shipped with this package."""
    return Tokenizer.from_bpe_file(BUNDLED_VOCAB)
