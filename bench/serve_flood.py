#!/usr/bin/env python3
"""An idle-connection flood against a `glass serve` on this machine (127.0.0.1 only).

THREADS threads open connections that never send a byte, as fast as they can, each closed after
HOLD seconds, while one client sends 10 real requests (GET /api/info), one a second. Prints the
flood's rate and how many real requests were answered 200. Bounded: about 11 seconds.

Usage: glass serve -m RUN --port 18977 -t 1 &   then   python3 bench/serve_flood.py 18977 4 0.5
"""
import socket, sys, threading, time, http.client
port = int(sys.argv[1]); threads = int(sys.argv[2]); hold = float(sys.argv[3])
stop = False; opened = [0]
def flood():
    held = []
    while not stop:
        try:
            s = socket.socket(); s.setblocking(True); s.connect(("127.0.0.1", port))
            held.append((time.time(), s)); opened[0] += 1
        except OSError:
            time.sleep(0.001)
        now = time.time()
        while held and now - held[0][0] > hold:
            held.pop(0)[1].close()
    for _, s in held: s.close()
ts = [threading.Thread(target=flood) for _ in range(threads)]
for t in ts: t.start()
time.sleep(1.0)
ok = 0; t0 = time.time(); n0 = opened[0]; lat = []
for i in range(10):
    a = time.time()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/api/info", headers={"Host": f"127.0.0.1:{port}"})
        r = c.getresponse(); r.read()
        if r.status == 200: ok += 1
        else: print("status", r.status)
    except Exception as e:
        print("failed:", type(e).__name__, e)
    lat.append(time.time() - a)
    time.sleep(max(0, 1.0 - (time.time() - a)))
rate = (opened[0] - n0) / (time.time() - t0)
stop = True
for t in ts: t.join()
print(f"flood {rate:.0f} idle connections/s ({threads} threads, each held {hold} s); real requests answered {ok}/10; latency median {sorted(lat)[5]*1000:.0f} ms max {max(lat)*1000:.0f} ms")
