"""d2l's text-data functions, re-implemented in plain Python, run on the
fixtures under tests/reference/fixtures/ to give qkv::data's tests their expected
values (tests/datasets/*). No torch is needed to compute them; torch only
carries the numbers into common.py's file format.

The functions are d2l's (PyTorch edition, d2l/torch.py), copied in spirit
line by line: Vocab and count_corpus (§9.2), preprocess_nmt, tokenize_nmt,
truncate_pad, build_array_nmt (§10.5), bleu (§10.7, the d2l 1.0 version with
' '.join and n up to min(k, len_pred)). The fixtures avoid the few inputs on
which qkv differs from d2l on purpose (see include/qkv/data/nmt.hpp).

Strings are written as int tensors of their UTF-8 bytes (key "token<i>" for
id i of a vocabulary, "text" for preprocessed text). Case names have no
spaces (the reader takes the first word). The corpus cases use
tests/reference/fixtures/eng-fra.txt, the BLEU cases bleu_pairs.txt.
"""
import collections
import math
import pathlib

import torch

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "fixtures"


# --- d2l ---------------------------------------------------------------------------
def count_corpus(tokens):
    if len(tokens) == 0 or isinstance(tokens[0], list):
        tokens = [token for line in tokens for token in line]
    return collections.Counter(tokens)


class Vocab:
    def __init__(self, tokens=None, min_freq=0, reserved_tokens=None):
        tokens = tokens or []
        reserved_tokens = reserved_tokens or []
        counter = count_corpus(tokens)
        self.token_freqs = sorted(counter.items(), key=lambda x: x[1], reverse=True)
        self.idx_to_token = ['<unk>'] + reserved_tokens
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}
        for token, freq in self.token_freqs:
            if freq < min_freq:
                break
            if token not in self.token_to_idx:
                self.idx_to_token.append(token)
                self.token_to_idx[token] = len(self.idx_to_token) - 1

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, (list, tuple)):
            return self.token_to_idx.get(tokens, 0)
        return [self.__getitem__(token) for token in tokens]


def preprocess_nmt(text):
    def no_space(char, prev_char):
        return char in set(',.!?') and prev_char != ' '
    text = text.replace('\u202f', ' ').replace('\xa0', ' ').lower()
    out = [' ' + char if i > 0 and no_space(char, text[i - 1]) else char for i, char in enumerate(text)]
    return ''.join(out)


def tokenize_nmt(text, num_examples=None):
    source, target = [], []
    for i, line in enumerate(text.split('\n')):
        if num_examples and i > num_examples:
            break
        parts = line.split('\t')
        if len(parts) == 2:
            source.append(parts[0].split(' '))
            target.append(parts[1].split(' '))
    return source, target


def truncate_pad(line, num_steps, padding_token):
    if len(line) > num_steps:
        return line[:num_steps]
    return line + [padding_token] * (num_steps - len(line))


def build_array_nmt(lines, vocab, num_steps):
    lines = [vocab[l] for l in lines]
    lines = [l + [vocab['<eos>']] for l in lines]
    array = torch.tensor([truncate_pad(l, num_steps, vocab['<pad>']) for l in lines])
    valid_len = (array != vocab['<pad>']).type(torch.int32).sum(1)
    return array, valid_len


def bleu(pred_seq, label_seq, k):
    pred_tokens, label_tokens = pred_seq.split(' '), label_seq.split(' ')
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))
    for n in range(1, min(k, len_pred) + 1):
        num_matches, label_subs = 0, collections.defaultdict(int)
        for i in range(len_label - n + 1):
            label_subs[' '.join(label_tokens[i: i + n])] += 1
        for i in range(len_pred - n + 1):
            if label_subs[' '.join(pred_tokens[i: i + n])] > 0:
                num_matches += 1
                label_subs[' '.join(pred_tokens[i: i + n])] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score


# --- writing -----------------------------------------------------------------------
def utf8(s):
    return torch.tensor(list(s.encode('utf-8')), dtype=torch.int64)


def vocab_ints(vocab):
    ints = {"size": torch.tensor([len(vocab)])}
    for i, token in enumerate(vocab.idx_to_token):
        ints[f"token{i}"] = utf8(token)
    ints["freqs"] = torch.tensor([f for _, f in vocab.token_freqs])
    return ints


def build(w):
    raw = (FIXTURES / "eng-fra.txt").read_text(encoding="utf-8")
    text = preprocess_nmt(raw)
    w.values("nmt/preprocess", ints={"text": utf8(text)})

    source, target = tokenize_nmt(text)
    reserved = ['<pad>', '<bos>', '<eos>']
    for min_freq in (2, 1):
        src_vocab = Vocab(source, min_freq, reserved)
        tgt_vocab = Vocab(target, min_freq, reserved)
        w.values(f"vocab/source-min_freq={min_freq}", ints=vocab_ints(src_vocab))
        w.values(f"vocab/target-min_freq={min_freq}", ints=vocab_ints(tgt_vocab))
        for num_steps in (8, 3):
            src_array, src_valid_len = build_array_nmt(source, src_vocab, num_steps)
            tgt_array, tgt_valid_len = build_array_nmt(target, tgt_vocab, num_steps)
            w.values(f"nmt/load-num_steps={num_steps}-min_freq={min_freq}",
                     ints={"src_array": src_array, "src_valid_len": src_valid_len,
                           "tgt_array": tgt_array, "tgt_valid_len": tgt_valid_len})

    # A flat token list, no reserved tokens: every target token of the corpus.
    flat = [token for line in target for token in line]
    w.values("vocab/flat", ints=vocab_ints(Vocab(flat)))

    scores = []
    for line in (FIXTURES / "bleu_pairs.txt").read_text(encoding="utf-8").split('\n'):
        if line:
            pred, label, k = line.split('\t')
            scores.append(bleu(pred, label, int(k)))
    w.values("bleu/pairs", tensors={"scores": torch.tensor(scores, dtype=torch.float64)})
