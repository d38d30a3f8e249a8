# description: KVCache.update never returns: only KVCache may pay, CachedCausalAttention is graded
#   with the reference cache
# source: written for this catalogue
# replaces: KVCache
# loses: KVCache
# symptom: did not finish

import time


class KVCache:
    def __init__(self):
        self.keys = None

    def update(self, k_new, v_new):
        while True:
            time.sleep(0.01)

    def __len__(self):
        return 0
