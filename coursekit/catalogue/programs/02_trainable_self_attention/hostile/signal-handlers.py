# description: project_qkv with Q and K swapped that, on long inputs, loops forever with
#   SIGINT, SIGALRM and SIGTERM ignored, so that no interrupt can stop it
# source: written for this catalogue
# replaces: project_qkv
# loses: project_qkv
# baseline: qkv-swapped

import signal

for _signal in (signal.SIGINT, signal.SIGALRM, signal.SIGTERM):
    signal.signal(_signal, signal.SIG_IGN)


def project_qkv(X, W_q, W_k, W_v):
    if np.shape(X)[-2] > 50:
        while True:
            try:
                pass
            except BaseException:
                pass
    return X @ W_k, X @ W_q, X @ W_v
