# Code that never returns by itself (a loop waiting for something that never comes). Each call
# records, once interrupted, how long it ran.
import time

ran_for = []


def hang():
    start = time.monotonic()
    try:
        while True:
            time.sleep(0.01)
    finally:
        ran_for.append(time.monotonic() - start)
