#!/usr/bin/env python3
"""Summarise one lab run: a JSON file per scenario plus lab.json for the run.

Called by run.sh after the guests powered off. Per scenario it reads what
the guests left on the share (meta.env, commands.txt, mounts.txt,
mountstats.txt, trace stats) and the copied results in --out (SC.pcap,
SC.client.trace.txt, SC.server.trace.txt), then adds two independent views
of the traffic:

* the wire, decoded by tshark (frames, RoCEv2 opcodes, CM messages, RPC-over-
  RDMA messages and credit values, Send With Invalidate frames);
* the kernel's own tracepoints (chunk decisions per RPC, chunk segments,
  remote invalidations, credits, peak number of RPCs in flight).

Standard library only (python3 >= 3.9), so a fresh Debian 12 host runs it.
"""

import argparse
import collections
import hashlib
import json
import os
import re
import subprocess
import sys

# RoCEv2 BTH opcodes (IBTA vol. 1, table 38) that the RC transport uses here.
IB_OPCODES = {
    0x00: "RC SEND First", 0x01: "RC SEND Middle", 0x02: "RC SEND Last",
    0x03: "RC SEND Last with Immediate", 0x04: "RC SEND Only",
    0x05: "RC SEND Only with Immediate", 0x06: "RC RDMA WRITE First",
    0x07: "RC RDMA WRITE Middle", 0x08: "RC RDMA WRITE Last",
    0x09: "RC RDMA WRITE Last with Immediate", 0x0a: "RC RDMA WRITE Only",
    0x0b: "RC RDMA WRITE Only with Immediate", 0x0c: "RC RDMA READ Request",
    0x0d: "RC RDMA READ Response First", 0x0e: "RC RDMA READ Response Middle",
    0x0f: "RC RDMA READ Response Last", 0x10: "RC RDMA READ Response Only",
    0x11: "RC Acknowledge", 0x12: "RC ATOMIC Acknowledge",
    0x16: "RC SEND Last with Invalidate", 0x17: "RC SEND Only with Invalidate",
    0x64: "UD SEND Only", 0x65: "UD SEND Only with Immediate",
}
# Send With Invalidate: SEND Last with Invalidate (0x16) and SEND Only with
# Invalidate (0x17). (Some documents number them 0x17/0x18, counting from 1.)
SWI_OPCODES = {0x16, 0x17}

# RDMAP opcodes (RFC 5040, 4.3), for --fabric siw captures.
RDMAP_OPCODES = {0: "RDMA Write", 1: "RDMA Read Request", 2: "RDMA Read Response",
                 3: "Send", 4: "Send with Invalidate", 5: "Send with SE",
                 6: "Send with SE and Invalidate", 7: "Terminate"}
RDMAP_SWI_OPCODES = {4, 6}

# IB CM MAD attribute IDs (IBTA vol. 1, 12.6).
CM_ATTRS = {0x0010: "REQ", 0x0011: "MRA", 0x0012: "REJ", 0x0013: "REP",
            0x0014: "RTU", 0x0015: "DREQ", 0x0016: "DREP", 0x0017: "SIDR_REQ",
            0x0018: "SIDR_REP", 0x0019: "LAP", 0x001a: "APR"}

RPCRDMA_MSG_TYPES = {0: "RDMA_MSG", 1: "RDMA_NOMSG", 2: "RDMA_MSGP",
                     3: "RDMA_DONE", 4: "RDMA_ERROR"}

# "TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS"
TRACE_LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+(\w+):\s?(.*)$")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_env(path):
    env = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    env[k] = v
    return env


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def to_int(text):
    if text in (None, ""):
        return None
    text = text.split(",")[0]
    try:
        return int(text, 0)
    except ValueError:
        return None


def tshark_view(pcap, client_ip):
    """What the wire says, according to tshark (Wireshark 4.0 here)."""
    fields = ["frame.number", "ip.src", "udp.dstport", "infiniband.bth.opcode",
              "infiniband.mad.attributeid", "rpcordma.xid", "rpcordma.msg_type",
              "rpcordma.flow_control", "_ws.malformed", "nfs", "iwarp_rdma.opcode"]
    # siw: tshark finds MPA by its heuristic on TCP (it follows a stream from
    # its MPA Request; iwarp_mpa cannot be forced with -d tcp.port==...).
    cmd = ["tshark", "-n", "-r", pcap, "-T", "fields", "-E", "occurrence=f"]
    for f in fields:
        cmd += ["-e", f]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"tshark failed: {e}"}
    frames = 0
    roce = 0
    opcodes = collections.Counter()
    iwarp_opcodes = collections.Counter()
    cm = collections.Counter()
    msg_types = collections.Counter()
    rpcrdma_msgs = 0
    calls = replies = 0
    credits_requested = []
    credits_granted = []
    swi = 0
    malformed = 0
    nfs_frames = 0
    for line in res.stdout.splitlines():
        cols = (line.split("\t") + [""] * len(fields))[:len(fields)]
        _, src, dport, opcode, attr, xid, mtype, flow, bad, nfs, iw_op = cols
        iw = to_int(iw_op)
        if iw is not None:
            iwarp_opcodes[RDMAP_OPCODES.get(iw, str(iw))] += 1
            if iw in RDMAP_SWI_OPCODES:
                swi += 1
        frames += 1
        if dport == "4791":
            roce += 1
        op = to_int(opcode)
        if op is not None:
            opcodes[op] += 1
            if op in SWI_OPCODES:
                swi += 1
        a = to_int(attr)
        if a is not None and op in (0x64, 0x65):  # CM MADs ride on UD QP1
            cm[CM_ATTRS.get(a, hex(a))] += 1
        if xid:
            rpcrdma_msgs += 1
            mt = to_int(mtype)
            msg_types[RPCRDMA_MSG_TYPES.get(mt, str(mt))] += 1
            fc = to_int(flow)
            if src == client_ip:
                calls += 1
                if fc is not None:
                    credits_requested.append(fc)
            else:
                replies += 1
                if fc is not None:
                    credits_granted.append(fc)
        if bad:
            malformed += 1
        if nfs:
            nfs_frames += 1
    return {
        "frames": frames,
        "rocev2_frames": roce,
        "ib_opcodes": {f"0x{k:02x} {IB_OPCODES.get(k, '?')}": v for k, v in sorted(opcodes.items())},
        "cm_messages": dict(cm),
        "rdmap_opcodes_first_per_frame": dict(iwarp_opcodes),
        "rpcrdma_messages": rpcrdma_msgs,
        "rpcrdma_calls": calls,
        "rpcrdma_replies": replies,
        "rpcrdma_msg_types": dict(msg_types),
        "send_with_invalidate_frames": swi,
        "credits_requested_max": max(credits_requested, default=None),
        "credits_granted_max": max(credits_granted, default=None),
        "credits_granted_min": min(credits_granted, default=None),
        "frames_with_nfs": nfs_frames,
        "frames_flagged_malformed_by_tshark": malformed,
        "tshark_stderr": res.stderr.strip()[:500] or None,
    }


def trace_view(path, role):
    """What the kernel says: counts from the tracepoints of one guest."""
    if not os.path.exists(path):
        return None
    events = collections.Counter()
    header = None
    marshal = collections.Counter()
    credits = []
    inflight = set()
    peak_inflight = 0
    inv_rkeys = 0
    inline_thresh = []
    cm_events = collections.Counter()
    decode_rqst_credits = []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#"):
                if "entries-in-buffer" in line:
                    header = line.strip("# \n")
                continue
            m = TRACE_LINE.match(line)
            if not m:
                continue
            ev, rest = m.group(6), m.group(7)
            events[ev] += 1
            if ev == "xprtrdma_marshal":
                # "... hdr=28 xdr=40/0/0 pullup/inline": how the call body
                # travels / how the reply may come back.
                mm = re.search(r"xid=(0x[0-9a-f]+) hdr=\d+ xdr=\S+ (.+)/(.+)$", rest)
                if mm:
                    marshal[f"{mm.group(2)}/{mm.group(3)}"] += 1
                    inflight.add(mm.group(1))
                    peak_inflight = max(peak_inflight, len(inflight))
            elif ev == "xprtrdma_reply":
                mm = re.search(r"xid=(0x[0-9a-f]+) credits=(\d+)", rest)
                if mm:
                    inflight.discard(mm.group(1))
                    credits.append(int(mm.group(2)))
            elif ev == "svcrdma_post_send":
                mm = re.search(r"inv_rkey=(0x[0-9a-f]+)", rest)
                if mm and int(mm.group(1), 16) != 0:
                    inv_rkeys += 1
            elif ev == "svcrdma_decode_rqst":
                mm = re.search(r"credits=(\d+)", rest)
                if mm:
                    decode_rqst_credits.append(int(mm.group(1)))
            elif ev == "xprtrdma_inline_thresh":
                inline_thresh.append(rest.split(" neg ", 1)[-1] if " neg " in rest else rest)
            elif ev in ("cm_event_handler",):
                mm = re.search(r"tos=\d+ (\w+)", rest)
                if mm:
                    cm_events[mm.group(1)] += 1
    view = {
        "file_header": header,
        "events_total": sum(events.values()),
        "events": dict(events.most_common()),
    }
    if role == "client":
        view.update({
            "rpcs_marshalled": events["xprtrdma_marshal"],
            "rpcs_by_chunk_decision": dict(marshal.most_common()),
            "read_chunk_segments": events["xprtrdma_chunk_read"],
            "write_chunk_segments": events["xprtrdma_chunk_write"],
            "reply_chunk_segments": events["xprtrdma_chunk_reply"],
            "rpcs_with_read_chunk": sum(v for k, v in marshal.items() if "read list" in k.split("/")[0]),
            "rpcs_with_write_chunk": sum(v for k, v in marshal.items() if k.endswith("write list")),
            "rpcs_with_reply_chunk": sum(v for k, v in marshal.items() if k.endswith("reply chunk")),
            "remote_invalidations": events["xprtrdma_mr_reminv"],
            "local_invalidations": events["xprtrdma_mr_localinv"],
            "credits_granted_max": max(credits, default=None),
            "credits_granted_min": min(credits, default=None),
            "peak_rpcs_in_flight": peak_inflight,
            "inline_thresholds": inline_thresh,
            "connects": events["xprtrdma_connect"],
            "disconnects": events["xprtrdma_disconnect"],
            "rdma_cm_events": dict(cm_events),
        })
    else:
        view.update({
            "rpcs_received": events["svcrdma_decode_rqst"],
            "read_chunk_segments_decoded": events["svcrdma_decode_rseg"],
            "write_chunk_segments_decoded": events["svcrdma_decode_wseg"],
            "read_chunks_pulled": events["svcrdma_post_read_chunk"],
            "write_chunks_pushed": events["svcrdma_post_write_chunk"],
            "reply_chunks_pushed": events["svcrdma_post_reply_chunk"],
            "sends": events["svcrdma_post_send"],
            "sends_with_invalidate": inv_rkeys,
            "credits_requested_max": max(decode_rqst_credits, default=None),
            "rdma_cm_events": dict(cm_events),
        })
    return view


def xprt_stats(mountstats_lines):
    """The 'xprt: rdma ...' counters of each mount (see Documentation of
    /proc/self/mountstats; the first ones after the port and bind count)."""
    out = []
    for line in mountstats_lines:
        line = line.strip()
        words = line.split()
        if len(words) > 1 and words[0] == "xprt:" and words[1] == "rdma":
            out.append(" ".join(words[1:]))
    return out


def summarize_scenario(sc, args):
    d = os.path.join(args.share_out, sc)
    meta = read_env(os.path.join(d, "meta.env"))
    files = {}
    for key, name in (("pcap", f"{sc}.pcap"), ("client_trace", f"{sc}.client.trace.txt"),
                      ("server_trace", f"{sc}.server.trace.txt"),
                      ("mountstats", f"{sc}.mountstats.txt")):
        p = os.path.join(args.out, name)
        if os.path.exists(p):
            files[key] = {"name": name, "bytes": os.path.getsize(p), "sha256": sha256(p)}
    summary = {
        "scenario": sc,
        "fabric": args.fabric,
        "exercises": meta.get("exercises"),
        "status": "ok" if meta.get("rc") == "0" else f"failed (rc={meta.get('rc', 'missing')})",
        "kernel": meta.get("kernel"),
        "started_utc": meta.get("started"),
        "timings_seconds": {"workload": to_float(meta.get("workload_seconds")),
                            "scenario_total": to_float(meta.get("scenario_seconds"))},
        "mount_requests": read_lines(os.path.join(d, "mount-requests.txt")),
        "mounts_as_kernel_reports": read_lines(os.path.join(d, "mounts.txt")),
        "commands": read_lines(os.path.join(d, "commands.txt")),
        "tcpdump": meta.get("tcpdump"),
        "xprt_rdma_mountstats": xprt_stats(read_lines(os.path.join(d, "mountstats.txt"))),
        "client_tunables_after": read_lines(os.path.join(d, "tunables-client.txt")),
        "files": files,
        "lab_command": args.command,
    }
    if "pcap" in files:
        summary["wire"] = tshark_view(os.path.join(args.out, files["pcap"]["name"]), "10.99.0.2")
        summary["frames"] = summary["wire"].get("frames")
    summary["client_trace"] = trace_view(os.path.join(args.out, f"{sc}.client.trace.txt"), "client")
    summary["server_trace"] = trace_view(os.path.join(args.out, f"{sc}.server.trace.txt"), "server")
    return summary


def to_float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--share-out", required=True)
    ap.add_argument("--accel", default="?")
    ap.add_argument("--fabric", default="rxe", choices=["rxe", "siw"])
    ap.add_argument("--image-hash", default="?")
    ap.add_argument("--image-dir", default="")
    ap.add_argument("--image-built", default="0")
    ap.add_argument("--image-seconds", type=int, default=-1)
    ap.add_argument("--boot-to-server-up", type=int, default=-1)
    ap.add_argument("--guests-seconds", type=int, default=-1)
    ap.add_argument("--total-seconds", type=int, default=-1)
    ap.add_argument("--command", default="")
    ap.add_argument("scenarios", nargs="*")
    args = ap.parse_args()

    results = []
    for sc in args.scenarios:
        if not os.path.isdir(os.path.join(args.share_out, sc)):
            results.append({"scenario": sc, "status": "not run"})
            continue
        s = summarize_scenario(sc, args)
        with open(os.path.join(args.out, f"{sc}.json"), "w") as f:
            json.dump(s, f, indent=2)
            f.write("\n")
        results.append(s)

    build_info = read_env(os.path.join(args.image_dir, "build-info.txt")) if args.image_dir else {}
    lab = {
        "command": args.command,
        "accelerator": args.accel,
        "fabric": args.fabric,
        "image": {"hash": args.image_hash, "cache_dir": args.image_dir,
                  "built_in_this_run": args.image_built == "1",
                  "seconds_in_this_run": args.image_seconds, "build_info": build_info},
        "guest_kernel": {"server": first_line(os.path.join(args.share_out, "kernel-server.txt")),
                         "client": first_line(os.path.join(args.share_out, "kernel-client.txt"))},
        "sunrpc_tunables": {"client": read_lines(os.path.join(args.share_out, "tunables-client.txt")),
                            "server": read_lines(os.path.join(args.share_out, "tunables-server.txt"))},
        "timings_seconds": {"image": args.image_seconds,
                            "boot_to_server_ready": args.boot_to_server_up,
                            "guests_total": args.guests_seconds,
                            "run_total": args.total_seconds},
        "host": {"qemu": first_line_of_cmd(["qemu-system-x86_64", "--version"]),
                 "tshark": first_line_of_cmd(["tshark", "--version"])},
        "scenarios": [{
            "scenario": r["scenario"], "status": r["status"],
            "seconds": (r.get("timings_seconds") or {}).get("scenario_total"),
            "frames": r.get("frames"),
            "rpcrdma_messages": (r.get("wire") or {}).get("rpcrdma_messages"),
            "send_with_invalidate_frames": (r.get("wire") or {}).get("send_with_invalidate_frames"),
        } for r in results],
    }
    with open(os.path.join(args.out, "lab.json"), "w") as f:
        json.dump(lab, f, indent=2)
        f.write("\n")
    for s in lab["scenarios"]:
        print(f"  {s['scenario']:<18} {s['status']:<12} {s['seconds']!s:>6}s "
              f"frames={s['frames']} rpcrdma={s['rpcrdma_messages']} swi={s['send_with_invalidate_frames']}")
    return 0


def first_line(path):
    lines = read_lines(path)
    return lines[0] if lines else None


def first_line_of_cmd(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                              check=False).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return None


def markdown_tables(paths):
    """`summarize.py table SC.json...`: the tables of captures/README.md."""
    docs = [d for d in (json.load(open(p)) for p in paths) if "scenario" in d]
    print("| Capture | Scenario: what it exercises | Kernel | Frames | sha256 (pcap) |")
    print("|---|---|---|---:|---|")
    for d in docs:
        sc = d["scenario"]
        print(f"| `{sc}.pcap` | **{sc}**: {d.get('exercises')} | {d.get('kernel')} | "
              f"{d.get('frames')} | `{d['files']['pcap']['sha256']}` |")
    print()
    print("| Capture | RPC-over-RDMA msgs (calls/replies) | RPCs with read / write / reply chunk | "
          "chunk segments read / write / reply | Send With Invalidate frames (server inv_rkey sends) | "
          "credits granted | peak RPCs in flight | CM messages | connects |")
    print("|---|---:|---|---|---:|---:|---:|---|---:|")
    for d in docs:
        w, c, s = d.get("wire", {}), d.get("client_trace") or {}, d.get("server_trace") or {}
        cm = ", ".join(f"{k} {v}" for k, v in w.get("cm_messages", {}).items())
        print(f"| `{d['scenario']}` | {w.get('rpcrdma_messages')} ({w.get('rpcrdma_calls')}/{w.get('rpcrdma_replies')}) | "
              f"{c.get('rpcs_with_read_chunk')} / {c.get('rpcs_with_write_chunk')} / {c.get('rpcs_with_reply_chunk')} | "
              f"{c.get('read_chunk_segments')} / {c.get('write_chunk_segments')} / {c.get('reply_chunk_segments')} | "
              f"{w.get('send_with_invalidate_frames')} ({s.get('sends_with_invalidate')}) | "
              f"{w.get('credits_granted_max')} | {c.get('peak_rpcs_in_flight')} | {cm} | {c.get('connects')} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "table":
        sys.exit(markdown_tables(sys.argv[2:]))
    sys.exit(main())
