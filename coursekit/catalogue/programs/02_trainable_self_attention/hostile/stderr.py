# description: a correct project_qkv that writes to stderr, at top level and when called
# source: written for this catalogue
# replaces: project_qkv

import sys


def project_qkv(X, W_q, W_k, W_v):
    print("project_qkv called", file=sys.stderr)
    return X @ W_q, X @ W_k, X @ W_v


sys.stderr.write("project_qkv defined\n")
