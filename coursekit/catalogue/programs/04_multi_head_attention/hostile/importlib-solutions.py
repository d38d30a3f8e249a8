# description: MultiHeadAttention imports the reference through importlib
# source: written for this catalogue
# replaces: MultiHeadAttention
# loses: MultiHeadAttention
# baseline: mha-unimplemented

import importlib

MultiHeadAttention = importlib.import_module("solu" + "tions").MultiHeadAttention
