# description: KVCache keeps its lists in class attributes, shared by every cache
# source: written for this catalogue
# replaces: KVCache
# loses: KVCache
# symptom: for a brand-new cache, not 0: do the caches share what they hold

class KVCache:
    keys = []
    values = []

    def __init__(self):
        pass

    def update(self, k_new, v_new):
        self.keys.append(k_new)
        self.values.append(v_new)
        return torch.cat(self.keys, dim=1), torch.cat(self.values, dim=1)

    def __len__(self):
        return sum(k.shape[1] for k in self.keys)
