# Leaves a file wherever a kernel may write: a later kernel must find none of them.
import json

PLACES = ["/tmp/trace", "/dev/shm/trace", "/dev/trace", "trace"]
left = []
for place in PLACES:
    try:
        with open(place, "w") as handle:
            handle.write("def softmax(x, axis=-1): ...")
        left.append(place)
    except OSError:
        pass
print("LEFT", json.dumps(left))
