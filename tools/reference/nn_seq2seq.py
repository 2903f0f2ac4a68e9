"""Reference values for the seq2seq models and their loss
(src/nn/seq2seq.cpp, src/nn/encoder_decoder.cpp, src/nn/loss.cpp;
tests/nn/test_seq2seq.cpp).

The classes below are d2l's (d2l.ai, 10.7 "Sequence to Sequence Learning"
and 11.4 "The Bahdanau Attention Mechanism", PyTorch edition), with d2l's
attribute names, so the parameter names (encoder.embedding.weight,
decoder.attention.W_q.weight, decoder.rnn.weight_ih_l0, …) are the ones qkv
loads. The changes, none of which changes a number:
  - d2l's Seq2SeqEncoder returns the outputs as (T, B, H) and its decoder's
    init_state permutes them to (B, T, H); here the pair is run by Seq2Seq
    below, which returns what qkv's EncoderDecoder exposes.
  - sequence_mask clones before its in-place write (X may require grad).
  - the attention weights are stacked into one (B, S, T) tensor and detached
    (qkv keeps them for drawing; they take no part in the backward).
"""
import torch
from torch import nn

from reference.d2l import sequence_mask
from reference.nn_attention import AdditiveAttention


# --- d2l: masking and the loss -------------------------------------------------------
class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
    # pred (B, S, V), label (B, S), valid_len (B)
    def forward(self, pred, label, valid_len):
        weights = torch.ones_like(label)
        weights = sequence_mask(weights, valid_len)
        self.reduction = 'none'
        unweighted_loss = super(MaskedSoftmaxCELoss, self).forward(pred.permute(0, 2, 1), label)
        weighted_loss = (unweighted_loss * weights).mean(dim=1)
        return weighted_loss


# --- d2l: the models (AdditiveAttention is d2l.py's, through nn_attention.py) -------------------------
class Seq2SeqEncoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super(Seq2SeqEncoder, self).__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, X, *args):
        X = self.embedding(X)
        X = X.permute(1, 0, 2)
        output, state = self.rnn(X)
        return output, state


class Seq2SeqAttentionDecoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super(Seq2SeqAttentionDecoder, self).__init__(**kwargs)
        self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens, *args):
        outputs, hidden_state = enc_outputs
        return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)

    def forward(self, X, state):
        enc_outputs, hidden_state, enc_valid_lens = state
        X = self.embedding(X).permute(1, 0, 2)
        outputs, self._attention_weights = [], []
        for x in X:
            query = torch.unsqueeze(hidden_state[-1], dim=1)
            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)
            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)
            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)
            outputs.append(out)
            self._attention_weights.append(self.attention.attention_weights)
        outputs = self.dense(torch.cat(outputs, dim=0))
        return outputs.permute(1, 0, 2), [enc_outputs, hidden_state, enc_valid_lens]

    @property
    def attention_weights(self):
        return self._attention_weights


class Seq2Seq(nn.Module):
    """d2l's EncoderDecoder for the Bahdanau pair; returns the logits (B, S, V),
    the decoder's final hidden state (L, B, H) and the attention (B, S, T)."""

    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, enc_X, dec_X, enc_valid_lens):
        enc_outputs = self.encoder(enc_X, enc_valid_lens)
        dec_state = self.decoder.init_state(enc_outputs, enc_valid_lens)
        Y, state = self.decoder(dec_X, dec_state)
        attention = torch.cat(self.decoder.attention_weights, dim=1).detach()  # S × (B, 1, T) -> (B, S, T)
        return Y, state[1], attention


def build(w):
    torch.manual_seed(0)

    # --- sequence_mask and the masked loss ---------------------------------------------
    # Each case holds its fill value (float "value"), which the test passes on.
    for name, shape, valid_len, value in [("2d", (3, 4), [1, 2, 0], 0.0), ("3d_value", (2, 3, 4), [3, 1], -1.0)]:
        valid_len = torch.tensor(valid_len)
        w.case(f"sequence_mask/{name}", lambda x, v=valid_len, f=value: sequence_mask(x, v, value=f),
               [w.randn(*shape)], ints={"valid_len": valid_len}, extra={"value": torch.tensor(value)})

    loss = MaskedSoftmaxCELoss()
    label = w.randint(0, 6, 3, 5)
    valid_len = torch.tensor([5, 2, 0])
    w.case("loss/masked", lambda pred: loss(pred, label, valid_len), [w.randn(3, 5, 6, scale=2.0)],
           ints={"label": label, "valid_len": valid_len})
    label = w.randint(0, 4, 2, 3)
    valid_len = torch.tensor([7, 1])  # a length past S masks nothing
    w.case("loss/long_valid_len", lambda pred: loss(pred, label, valid_len), [w.randn(2, 3, 4)],
           ints={"label": label, "valid_len": valid_len})

    # --- the GRU encoder alone: outputs (B, T, H) and final state (L, B, H) ---------------
    enc = Seq2SeqEncoder(vocab_size=11, embed_size=5, num_hiddens=6, num_layers=2)
    X = w.randint(0, 11, 3, 4)

    def encode(m):
        outputs, state = m(X)
        return outputs.permute(1, 0, 2), state  # (T, B, H) -> (B, T, H), as qkv's encoder returns them

    w.module_case("encoder", enc, encode, [], ints={"X": X})

    # --- the Bahdanau pair, end to end: padding in the source, S != T ------------------
    # The test takes the sizes from the embeddings' and GRUs' parameters, and
    # the number of layers from the int num_layers.
    for tag, layers in [("one_layer", 1), ("two_layers", 2)]:
        enc = Seq2SeqEncoder(vocab_size=11, embed_size=5, num_hiddens=6, num_layers=layers)
        dec = Seq2SeqAttentionDecoder(vocab_size=9, embed_size=4, num_hiddens=6, num_layers=layers)
        enc_X = w.randint(0, 11, 3, 7)
        dec_X = w.randint(0, 9, 3, 5)
        enc_valid_lens = torch.tensor([7, 3, 5])
        w.module_case(f"bahdanau/{tag}", Seq2Seq(enc, dec), lambda m: m(enc_X, dec_X, enc_valid_lens), [],
                      ints={"enc_X": enc_X, "dec_X": dec_X, "enc_valid_lens": enc_valid_lens,
                            "num_layers": torch.tensor(layers)})
