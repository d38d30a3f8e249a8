# description: dot_product_variance calls sys.exit() when called
# source: written for this catalogue
# replaces: dot_product_variance
# loses: dot_product_variance
# baseline: variance-unimplemented

def dot_product_variance(d_k, num_samples=10_000, seed=0):
    import sys
    sys.exit(0)
