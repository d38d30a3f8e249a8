# Looks for what an earlier kernel left (leave_traces.py).
import json
import os

PLACES = ["/tmp/trace", "/dev/shm/trace", "/dev/trace", "trace", "/trace", "/trace-remounted"]
print("FOUND", json.dumps([place for place in PLACES if os.path.exists(place)]))
