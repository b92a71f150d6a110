"""Frames per second through Python: `dissect()` on frames already in
memory, and `read_capture()` over a file (read, dissect, build the dicts).

    target/python-venv/bin/python python/benches/throughput.py captures/v3-ddp.pcap
"""

import struct
import sys
import time

import rdma_dissectors as rd


def frames_of(path):
    """The frames of a classic pcap file, read with the struct module."""
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data)[0]
    assert magic in (0xA1B2C3D4, 0xA1B23C4D), "classic little-endian pcap only"
    (link,) = struct.unpack_from("<I", data, 20)
    out, at = [], 24
    while at + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, at + 8)[0]
        out.append(data[at + 16 : at + 16 + caplen])
        at += 16 + caplen
    return link, out


def best_of(n, f):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    link, frames = frames_of(path)
    dissect = rd.dissect
    def dissect_all():
        for f in frames:
            dissect(f, link)

    t = best_of(runs, dissect_all)
    print(f"dissect():      {len(frames) / t:12,.0f} frames/s  ({len(frames)} frames, median of {runs})")
    t = best_of(runs, lambda: sum(1 for _ in rd.read_capture(path)))
    print(f"read_capture(): {len(frames) / t:12,.0f} frames/s")


if __name__ == "__main__":
    main()
