"""d2l's masking functions (d2l.ai, "Attention Scoring Functions", PyTorch
edition), shared by the reference scripts that need them. The one change:
sequence_mask clones before its in-place write, since here X may require grad
(the book calls it on plain scores)."""
import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X = X.clone()
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    """Softmax over the last axis; keys past the valid length get -1e6 first."""
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)
