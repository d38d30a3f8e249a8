# A dot_product that never returns and swallows every interrupt: the judge must restart the
# kernel, replay the notebook, and charge only this step.
def dot_product(a, b):
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass
