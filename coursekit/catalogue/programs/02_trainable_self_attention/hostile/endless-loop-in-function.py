# description: project_qkv loops forever on long inputs (the hidden suite's 128 tokens): only its
#   own step may pay
# source: written for this catalogue
# replaces: project_qkv
# loses: project_qkv
# symptom: did not finish

def project_qkv(X, W_q, W_k, W_v):
    import time
    while np.shape(X)[-2] > 64:
        time.sleep(0.01)
    return X @ W_q, X @ W_k, X @ W_v
