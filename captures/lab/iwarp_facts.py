#!/usr/bin/env python3
"""What tshark counts in an iWARP capture, as a `.tshark-facts` file.

    python3 captures/lab/iwarp_facts.py captures/iwarp/SC.pcap > captures/iwarp/SC.tshark-facts

Walks tshark's JSON dissection tree (`-T json --no-duplicate-keys`) and counts
MPA Requests/Replies (revision, CRC and marker flags, rejects), FPDUs, DDP
segments (tagged, untagged) and RDMAP messages per opcode (a message is the
segment with DDP's Last flag), and the RPC-over-RDMA headers tshark decodes.
analyzer/tests/iwarp_captures.rs counts the same from `tshark -T fields`, a
second reading, and compares with the committed file; the analyzer's own
iWARP dissection is then checked against these numbers.
"""
import collections
import json
import subprocess
import sys

# RFC 5040, 4.3 (RFC 7306's atomics are not sent by siw).
OPCODES = ["rdma_write", "rdma_read_request", "rdma_read_response", "send",
           "send_invalidate", "send_se", "send_se_invalidate", "terminate"]


def walk(node, visit):
    """Every (key, value) of the tree; duplicate keys arrive as lists."""
    if isinstance(node, dict):
        for k, v in node.items():
            for item in (v if isinstance(v, list) else [v]):
                visit(k, item)
                walk(item, visit)
    elif isinstance(node, list):
        for item in node:
            walk(item, visit)


def count(pcap):
    cmd = ["tshark", "-n", "-r", pcap, "-T", "json", "--no-duplicate-keys",
           "-J", "iwarp_mpa iwarp_ddp_rdmap rpcordma"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit(f"iwarp_facts: tshark failed on {pcap}: {res.stderr.strip()}")
    packets = json.loads(res.stdout or "[]")
    c = collections.Counter({"frames": len(packets)})
    for op in OPCODES:
        c[f"segments.{op}"] += 0
        c[f"messages.{op}"] += 0

    def visit(key, value):
        if key in ("iwarp_mpa.req", "iwarp_mpa.rep") and isinstance(value, dict):
            kind = "requests" if key.endswith("req") else "replies"
            c[f"mpa_{kind}"] += 1
            c[f"mpa_{kind}_rev{value.get('iwarp_mpa.rev', '?')}"] += 1
            c["mpa_rejects"] += value.get("iwarp_mpa.rej_flag") == "1"
            c["mpa_crc_flags"] += value.get("iwarp_mpa.crc_flag") == "1"
            c["mpa_marker_flags"] += value.get("iwarp_mpa.marker_flag") == "1"
        elif key == "iwarp_mpa.fpdu":
            c["fpdus"] += 1
        elif key == "rpcordma.msg_type":
            c["rpcrdma_messages"] += 1

    walk(packets, visit)
    # A DDP segment is an object holding both the DDP and the RDMAP header.
    def segments(node):
        if isinstance(node, dict):
            if "iwarp_ddp" in node and "iwarp_rdma" in node:
                ctl = node["iwarp_ddp"]["iwarp_ddp.control_field"]
                op = int(node["iwarp_rdma"]["iwarp_rdma.control_field"]["iwarp_rdma.opcode"], 0)
                name = OPCODES[op] if op < len(OPCODES) else f"opcode_{op}"
                tagged = ctl["iwarp_ddp.tagged_flag"] == "1"
                c["ddp_tagged_segments" if tagged else "ddp_untagged_segments"] += 1
                c[f"segments.{name}"] += 1
                c[f"messages.{name}"] += ctl["iwarp_ddp.last_flag"] == "1"
                return
            for v in node.values():
                segments(v)
        elif isinstance(node, list):
            for v in node:
                segments(v)

    segments(packets)
    for k in ("mpa_requests", "mpa_replies", "mpa_rejects", "mpa_crc_flags",
              "mpa_marker_flags", "fpdus", "ddp_tagged_segments",
              "ddp_untagged_segments", "rpcrdma_messages"):
        c[k] += 0
    return c


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    pcap = sys.argv[1]
    c = count(pcap)
    version = subprocess.run(["tshark", "--version"], capture_output=True, text=True,
                             check=False).stdout.splitlines()[0]
    print(f"# What tshark counts in {pcap.rsplit('/', 1)[-1]}: captures/lab/iwarp_facts.py")
    print(f"# ({version.rstrip('.')}). Checked by analyzer/tests/iwarp_captures.rs.")
    for k in sorted(c):
        print(f"{k} {c[k]}")


if __name__ == "__main__":
    main()
