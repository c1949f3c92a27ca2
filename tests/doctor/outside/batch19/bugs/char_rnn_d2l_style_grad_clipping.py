"""Gradient clipping helper never clips because it receives a one-shot generator.

The D2L-style ``grad_clipping(params, theta, device)`` helper first loops over
``params`` to accumulate the global gradient norm and then loops over ``params``
a second time to rescale the gradients.  The training loop passes
``model.parameters()``, which is a generator: the first loop exhausts it, the
second loop body never runs, and the gradients are never clipped.  The norm is
computed (and even exceeds theta most of the time), so the code looks like it
works, but the RNN language model trains with raw, unclipped gradients at a
learning rate that was tuned assuming clipping.

Source: https://github.com/ShusenTang/Dive-into-DL-PyTorch/issues/101
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

num_hiddens, num_steps, batch_size = 64, 20, 16
lr, clipping_theta, num_epochs = 1.5, 0.2, 4
device = torch.device("cpu")


def load_corpus():
    words = ["the", "cat", "sat", "on", "mat", "dog", "ran", "to", "a", "red", "ball", "and", "then", "slept"]
    g = torch.Generator().manual_seed(3)
    text = []
    for _ in range(300):
        n = int(torch.randint(3, 8, (1,), generator=g))
        text.append(" ".join(words[int(i)] for i in torch.randint(0, len(words), (n,), generator=g)))
    corpus = " . ".join(text)
    idx_to_char = sorted(set(corpus))
    char_to_idx = {c: i for i, c in enumerate(idx_to_char)}
    return [char_to_idx[c] for c in corpus], char_to_idx, idx_to_char


def data_iter_consecutive(corpus_indices, batch_size, num_steps):
    corpus = torch.tensor(corpus_indices)
    batch_len = len(corpus) // batch_size
    corpus = corpus[: batch_size * batch_len].view(batch_size, batch_len)
    epoch_size = (batch_len - 1) // num_steps
    for i in range(epoch_size):
        i = i * num_steps
        yield corpus[:, i : i + num_steps], corpus[:, i + 1 : i + num_steps + 1]


class RNNModel(nn.Module):
    def __init__(self, rnn_layer, vocab_size):
        super().__init__()
        self.rnn = rnn_layer
        self.vocab_size = vocab_size
        self.dense = nn.Linear(rnn_layer.hidden_size, vocab_size)

    def forward(self, inputs, state):
        x = nn.functional.one_hot(inputs.T, self.vocab_size).float()
        y, state = self.rnn(x, state)
        return self.dense(y.reshape(-1, y.shape[-1])), state


def grad_clipping(params, theta, device):
    norm = torch.tensor([0.0], device=device)
    for param in params:
        norm += (param.grad.data**2).sum()
    norm = norm.sqrt().item()
    if norm > theta:
        for param in params:
            param.grad.data *= theta / norm
    return norm


def train_and_predict_rnn_pytorch(model, corpus_indices):
    loss = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(num_epochs):
        l_sum, n, state, norms = 0.0, 0, None, []
        for X, Y in data_iter_consecutive(corpus_indices, batch_size, num_steps):
            if state is not None:
                state = state.detach()
            output, state = model(X, state)
            y = Y.T.reshape(-1)
            l = loss(output, y)
            optimizer.zero_grad()
            l.backward()
            norms.append(grad_clipping(model.parameters(), clipping_theta, device))  # BUG-LINE
            optimizer.step()
            l_sum += l.item() * y.shape[0]
            n += y.shape[0]
        print(
            f"epoch {epoch + 1}, perplexity {math.exp(l_sum / n):.3f}, "
            f"mean grad norm {sum(norms) / len(norms):.3f} (theta {clipping_theta})"
        )


def main():
    corpus_indices, char_to_idx, idx_to_char = load_corpus()
    vocab_size = len(idx_to_char)
    rnn_layer = nn.RNN(input_size=vocab_size, hidden_size=num_hiddens)
    model = RNNModel(rnn_layer, vocab_size).to(device)
    train_and_predict_rnn_pytorch(model, corpus_indices)


if __name__ == "__main__":
    main()
