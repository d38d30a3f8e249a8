# description: CausalAttention.forward kills the kernel with os._exit(1): the demo cells that call it
#   end the kernel in an ordinary cell, which each says, and a fresh kernel replays the cells before
#   it; the step's own cases lose their kernel; the notebook is graded (it was not, before
#   autograder/dead_kernel.py)
# source: written for this catalogue
# replaces: CausalAttention
# loses: CausalAttention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        import os
        os._exit(1)
