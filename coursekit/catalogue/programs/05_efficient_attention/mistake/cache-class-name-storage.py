# description: KVCache stores through the class name (KVCache.keys), so every new cache empties the one store all caches share
# source: written for this catalogue
# replaces: KVCache
# loses: KVCache
# symptom: two KVCache objects share what they hold

class KVCache:
    def __init__(self):
        KVCache.keys = None    # (batch, T, d) once something is stored
        KVCache.values = None

    def update(self, k_new, v_new):
        if KVCache.keys is None:
            KVCache.keys, KVCache.values = k_new, v_new
        else:
            KVCache.keys = torch.cat([KVCache.keys, k_new], dim=1)
            KVCache.values = torch.cat([KVCache.values, v_new], dim=1)
        return KVCache.keys, KVCache.values

    def __len__(self):
        return 0 if KVCache.keys is None else KVCache.keys.shape[1]
