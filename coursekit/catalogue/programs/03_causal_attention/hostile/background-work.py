# description: CausalAttention with dropout on the values, a thread that spins forever, a
#   subprocess that sleeps for ten minutes, and twenty forked children that sleep in sessions
#   of their own (the sandbox's process cap is tested on its own in tests/test_judge.py)
# source: written for this catalogue
# replaces: CausalAttention
# loses: CausalAttention
# baseline: causal-dropout-on-values

import os
import subprocess
import threading
import time


def _spin():
    while True:
        pass


threading.Thread(target=_spin, daemon=True).start()
subprocess.Popen(["sleep", "600"], start_new_session=True)
for _ in range(20):
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length), persistent=False)

    def forward(self, x):
        num_tokens = x.shape[-2]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        weights = masked_softmax(scores, self.mask[:num_tokens, :num_tokens])
        return weights @ self.dropout(values)
