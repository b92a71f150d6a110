#!/usr/bin/env python3
"""The metrics exporter under the attacks of issue 23, against the real
`live -i lo --no-tui --metrics` started under a 1024-descriptor limit (as
systemd starts it): what a scrape gets beside the attacker, and the
process's RSS (VmRSS/VmHWM, kB). Needs root (live -i lo) and prlimit.
The before/after figures in the issue's note come from this script.

usage: scripts/bench-exporter-attacks.py BIN ATTACK
  ATTACK: pipeline  (a client pipelines requests for 3 s and never reads; ~70 s)
          halfopen  (600 connections held open, nothing sent)
          header    (256 MiB of one header line without an end)
          slowloris (a byte a second)"""
import os, socket, subprocess, sys, time, re

BIN, ATTACK = sys.argv[1], sys.argv[2]
port = {"pipeline": 19461, "halfopen": 19462, "header": 19463, "slowloris": 19464}[ATTACK]
cmd = ["prlimit", "--nofile=1024:1024", "--", BIN, "live", "-i", "lo", "--no-tui", "--metrics", f"127.0.0.1:{port}"]
err = open(os.devnull, "w")
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
time.sleep(1.5)

def hwm():
    s = open(f"/proc/{p.pid}/status").read()
    return {k: int(re.search(k + r":\s+(\d+)", s).group(1)) for k in ("VmRSS", "VmHWM")}

def scrape(timeout=5.0):
    t = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.settimeout(timeout)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            data += c
        s.close()
        ok = data.startswith(b"HTTP/1.1 200")
        return ("ok" if ok else "bad:" + repr(data[:40])), time.time() - t
    except Exception as e:
        return "fail:" + type(e).__name__, time.time() - t

print("before attack: scrape", scrape(), hwm())
if ATTACK == "pipeline":
    hog = socket.create_connection(("127.0.0.1", port))
    hog.setblocking(False)
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 64
    sent = 0; t = time.time()
    while time.time() - t < 3:
        try:
            sent += hog.send(req)
        except BlockingIOError:
            time.sleep(0.01)
    print("hog sent", sent, "bytes, never reads")
    for i in range(3):
        print("scrape beside the hog", scrape())
    time.sleep(62)
    print("after 65 s: scrape", scrape())
    hog.close()
elif ATTACK == "halfopen":
    held = []
    for i in range(600):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except Exception as e:
            print("connect", i, "failed:", e); break
    print("held", len(held), hwm())
    print("scrape while held", scrape(3))
    for s in held: s.close()
    time.sleep(3)
    print("scrape after they closed", scrape(), "live alive:", p.poll() is None)
elif ATTACK == "header":
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nX-Long: ")
    chunk = b"a" * (1 << 20); sent = 0; t = time.time()
    try:
        while sent < (256 << 20):
            s.sendall(chunk); sent += len(chunk)
        outcome = "all sent"
    except Exception as e:
        outcome = "cut off: " + type(e).__name__
    print("header line: sent", sent >> 20, "MiB,", outcome, "in %.1f s" % (time.time() - t), hwm())
    print("scrape afterwards", scrape())
elif ATTACK == "slowloris":
    s = socket.create_connection(("127.0.0.1", port))
    t = time.time(); closed = None
    for b in b"GET /metrics HTTP/1.1\r\nHost: slowloris.example\r\nX-A: bbbbbbbbbbbbbbbbbbbbbbbb\r\n\r\n":
        try:
            s.send(bytes([b]))
        except Exception as e:
            closed = time.time() - t; break
        time.sleep(1)
        if time.time() - t > 30:
            break
    print("slowloris (1 byte/s): connection closed by the exporter after", "%.1f s" % closed if closed else "never (30 s cap of the test)")
    print("scrape afterwards", scrape())
p.terminate()
try:
    rc = p.wait(10)
except subprocess.TimeoutExpired:
    p.kill(); rc = p.wait()
print("live exit", rc)
