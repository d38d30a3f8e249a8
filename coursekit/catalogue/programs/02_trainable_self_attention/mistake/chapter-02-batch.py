# description: the chapter's SelfAttention_v2 pasted in verbatim: keys.T fails on a batch
# source: the chapter's SelfAttention_v2 (Raschka, Build a Large Language Model (From Scratch), ch.
#   3), verbatim, bound to the course's name SelfAttention
# replaces: SelfAttention
# loses: SelfAttention
# symptom: keys.T

class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec


SelfAttention = SelfAttention_v2
