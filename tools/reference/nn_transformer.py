"""Reference values for the Transformer layers (tests/nn/test_transformer.cpp).

d2l's classes (d2l.ai 11.6.3 and 11.7, PyTorch edition) with d2l's attribute
names, so p.<names> load into qkv's layers. Changes, all forced by qkv having
no lazy layers or kept so the names match:
  - LazyLinear becomes Linear with the input size given (PositionWiseFFN
    takes ffn_num_input first, as qkv's does);
  - blocks sit in an nn.Sequential named 0, 1, … (d2l names them block0, …),
    as qkv's ModuleList does;
  - P is computed in float64 (d2l: float32), the exact values qkv rounds to.
LayerNorm weights and biases are randomised so their gradients mean something.
"""
import math

import torch
from torch import nn

from reference.nn_attention import MultiHeadAttention


class PositionalEncoding(nn.Module):
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.P = torch.zeros((1, max_len, num_hiddens))
        X = torch.arange(max_len).reshape(-1, 1) / torch.pow(
            10000, torch.arange(0, num_hiddens, 2) / num_hiddens)
        self.P[:, :, 0::2] = torch.sin(X)
        self.P[:, :, 1::2] = torch.cos(X)

    def forward(self, X):
        X = X + self.P[:, :X.shape[1], :].to(X.device)
        return self.dropout(X)


class PositionWiseFFN(nn.Module):
    def __init__(self, ffn_num_input, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.Linear(ffn_num_input, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(nn.Module):
    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class TransformerEncoder(nn.Module):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, use_bias=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(str(i), TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias))

    def forward(self, X, valid_lens):
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens)
            self.attention_weights[i] = blk.attention.attention.attention_weights
        return X


class TransformerDecoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, i):
        super().__init__()
        self.i = i
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    def forward(self, X, state):
        enc_outputs, enc_valid_lens = state[0], state[1]
        if state[2][self.i] is None:
            key_values = X
        else:
            key_values = torch.cat((state[2][self.i], X), dim=1)
        state[2][self.i] = key_values
        if self.training:
            batch_size, num_steps, _ = X.shape
            dec_valid_lens = torch.arange(1, num_steps + 1, device=X.device).repeat(batch_size, 1)
        else:
            dec_valid_lens = None
        X2 = self.attention1(X, key_values, key_values, dec_valid_lens)
        Y = self.addnorm1(X, X2)
        Y2 = self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens)
        Z = self.addnorm2(Y, Y2)
        return self.addnorm3(Z, self.ffn(Z)), state


class TransformerDecoder(nn.Module):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.num_blks = num_blks
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(str(i), TransformerDecoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, i))
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        return [enc_outputs, enc_valid_lens, [None] * self.num_blks]

    def forward(self, X, state):
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self._attention_weights = [[None] * len(self.blks) for _ in range(2)]
        for i, blk in enumerate(self.blks):
            X, state = blk(X, state)
            self._attention_weights[0][i] = blk.attention1.attention.attention_weights
            self._attention_weights[1][i] = blk.attention2.attention.attention_weights
        return self.dense(X), state


def randomise_layer_norms(m, w):
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.LayerNorm):
                mod.weight.copy_(1 + 0.3 * w.randn(*mod.weight.shape))
                mod.bias.copy_(0.3 * w.randn(*mod.bias.shape))
    return m


def per_head(weights, num_heads):
    """d2l's (B·h, Q, K) weights as (B, h, Q, K), detached (qkv keeps them detached)."""
    B_h, Q, K = weights.shape
    return weights.detach().reshape(B_h // num_heads, num_heads, Q, K)


def build(w):
    torch.manual_seed(0)

    # --- positional encoding --------------------------------------------------
    pe = PositionalEncoding(32, 0.0, max_len=60)
    w.values("pos_encoding/P", tensors={"P": pe.P})
    w.module_case("pos_encoding/forward", pe, lambda m, x: m(x), [w.randn(2, 7, 32)])
    w.module_case("pos_encoding/offset5", pe, lambda m, x: m.dropout(x + m.P[:, 5:12, :]), [w.randn(2, 7, 32)])

    # --- position-wise FFN and add & norm -------------------------------------
    w.module_case("ffn", PositionWiseFFN(6, 10, 4), lambda m, x: m(x), [w.randn(2, 3, 6)])
    w.module_case("addnorm", randomise_layer_norms(AddNorm(5, 0.0), w), lambda m, x, y: m(x, y),
                  [w.randn(2, 3, 5), w.randn(2, 3, 5)])

    # --- encoder --------------------------------------------------------------
    for name, use_bias in [("encoder_block", False), ("encoder_block/bias", True)]:
        blk = randomise_layer_norms(TransformerEncoderBlock(12, 20, 3, 0.0, use_bias), w)
        lens = torch.tensor([3, 5])
        # Sizes and bias come from the p.* shapes; num_heads is written into the case.
        w.module_case(name, blk, lambda m, x, lens=lens: m(x, lens), [w.randn(2, 5, 12)],
                      ints={"valid_lens": lens, "num_heads": torch.tensor(3)})

    enc = randomise_layer_norms(TransformerEncoder(11, 12, 20, 3, 2, 0.0), w)
    ids, lens = w.randint(0, 11, 2, 5), torch.tensor([2, 5])
    w.module_case("encoder", enc, lambda m: (m(ids, lens), per_head(m.attention_weights[1], 3)), [],
                  ints={"X": ids, "valid_lens": lens})

    # --- decoder --------------------------------------------------------------
    # Training mode (dropout 0): the whole target at once, causal mask [1 … S].
    blk = randomise_layer_norms(TransformerDecoderBlock(12, 20, 3, 0.0, 0), w)
    lens = torch.tensor([3, 5])
    w.module_case("decoder_block/train", blk, lambda m, x, e: m(x, [e, lens, [None]])[0],
                  [w.randn(2, 4, 12), w.randn(2, 5, 12)], ints={"enc_valid_lens": lens})
    # Evaluation mode, one step after 3 cached ones: keys and values are the
    # cache followed by X (x2 is the cache).
    blk = randomise_layer_norms(TransformerDecoderBlock(12, 20, 3, 0.0, 0), w).eval()
    w.module_case("decoder_block/cached_step", blk, lambda m, x, e, cache: m(x, [e, lens, [cache]])[0],
                  [w.randn(2, 1, 12), w.randn(2, 5, 12), w.randn(2, 3, 12)], ints={"enc_valid_lens": lens})

    dec = randomise_layer_norms(TransformerDecoder(13, 12, 20, 3, 2, 0.0), w)
    ids = w.randint(0, 13, 2, 4)

    def decode(m, e):
        logits, _ = m(ids, m.init_state(e, lens))
        return logits, per_head(m._attention_weights[1][1], 3), per_head(m._attention_weights[0][0], 3)

    w.module_case("decoder/train", dec, decode, [w.randn(2, 5, 12)], ints={"X": ids, "enc_valid_lens": lens})
