#!/usr/bin/env python3
"""A userspace RPC-over-RDMA v1 peer for the lab (runs in the client guest).

Linux's own NFS client never sends a header the server refuses, never sends
past the server's receive buffers and always posts its receives before the
replies come; this peer does each of these on purpose, so that the real
kernel server (nfsd's svcrdma) shows how it reacts on the wire:

  vers2     a call whose header says version 2 (RFC 8166 4.2: the server
            answers RDMA_ERROR / ERR_VERS)
  badchunk  a version-1 call whose Write list claims more segments than the
            header holds (the server cannot decode it: the 6.1 server
            answers ERR_CHUNK, RFC 8166 4.5.3, and keeps the connection)
  overrun   a Send of --size bytes, larger than the server's receive buffers
            (4096 bytes when the CM private data says nothing, RFC 8797 4.2)
  rnr       a valid NULL call, but the receive for its reply is posted only
            --recv-delay seconds after the call went out: the server's Send
            meets RNR NAKs until then (the REQ asks for rnr_retry_count 7,
            "retry forever", so the connection survives)

One connection per run (rdma_cm, port 20049); what happened is printed, one
"peer:" line per event, for the scenario's output.txt. The blocking verbs
calls are bounded by --wait seconds: a reply that never comes ends the run
(exit status 142) instead of hanging it.
"""
import argparse
import struct
import sys
import signal
import time

from pyverbs.cmid import AddrInfo, CMID, ConnParam
from pyverbs.qp import QPCap, QPInitAttr
import pyverbs.cm_enums as ce
import pyverbs.enums as e

RPCRDMA_PORT = "20049"
NFS_PROGRAM, NFS_V3, NULLPROC = 100003, 3, 0
RDMA_MSG, RDMA_ERROR = 0, 4
ERRORS = {1: "ERR_VERS", 2: "ERR_CHUNK"}
RECV_SIZE = 4096


def say(msg):
    print(f"peer: {time.strftime('%H:%M:%S')} {msg}", flush=True)


def rpc_null_call(xid):
    # RFC 5531 call body: xid, CALL, rpcvers 2, prog, vers, proc,
    # AUTH_NONE credential and verifier.
    return struct.pack(">IIIIIIIIII", xid, 0, 2, NFS_PROGRAM, NFS_V3, NULLPROC, 0, 0, 0, 0)


def message(mode, xid, size):
    """The bytes of the Send for MODE (RPC-over-RDMA header + RPC call)."""
    call = rpc_null_call(xid)
    if mode == "vers2":
        return struct.pack(">IIII", xid, 2, 1, RDMA_MSG) + struct.pack(">III", 0, 0, 0) + call
    if mode == "badchunk":
        # Write list present, one chunk of 1000 segments, none of them sent.
        return struct.pack(">IIII", xid, 1, 1, RDMA_MSG) + struct.pack(">III", 0, 1, 1000)
    hdr = struct.pack(">IIII", xid, 1, 1, RDMA_MSG) + struct.pack(">III", 0, 0, 0)
    body = hdr + call
    if mode == "overrun":
        # The call's opaque tail is padding: the server never gets to parse it.
        body += b"\0" * max(0, size - len(body))
    return body


def describe_reply(buf, n):
    if n < 16:
        return f"{n}-byte message (too short for a header)"
    xid, vers, credits, proc = struct.unpack(">IIII", buf[:16])
    text = f"xid {xid:#010x} vers {vers} credits {credits} proc {proc}"
    if proc == RDMA_ERROR and n >= 20:
        code = struct.unpack(">I", buf[16:20])[0]
        text += f" RDMA_ERROR {ERRORS.get(code, code)}"
        if code == 1 and n >= 28:
            text += " (versions %d..%d)" % struct.unpack(">II", buf[20:28])
    return text


def bounded(what, fn, wait):
    """Call the blocking FN; (result, None) or (None, why).

    The verbs call holds the interpreter while it blocks, so no Python timer
    can interrupt it: SIGALRM with its default action ends the process
    instead (exit status 142), and the line before says what it waited for.
    """
    say(f"waiting up to {wait:g} s for the {what}")
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, int(wait + 0.999)))
    try:
        return fn(), None
    except Exception as exc:  # pyverbs raises on a failed completion poll
        return None, f"{what} failed: {exc}"
    finally:
        signal.alarm(0)


def run(args):
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    init = QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap)
    try:
        ai = AddrInfo(src=args.source, dst=args.server, dst_service=RPCRDMA_PORT,
                      port_space=ce.RDMA_PS_TCP)
    except TypeError:
        # rdma-core after v44 (Debian trixie) calls the port "service".
        ai = AddrInfo(src=args.source, dst=args.server, service=RPCRDMA_PORT,
                      port_space=ce.RDMA_PS_TCP)
    cmid = CMID(creator=ai, qp_init_attr=init)
    # rnr_retry 7 (infinite) is what the REQ tells the server for its own
    # Sends to us: the rnr scenario must show NAKs, then the reply, not a
    # dead connection.
    cmid.connect(ConnParam(resources=1, depth=1, retry=7, rnr_retry=7))
    say(f"connected to {args.server}:{RPCRDMA_PORT}")
    recv = cmid.reg_msgs(RECV_SIZE)
    if args.mode != "rnr":
        cmid.post_recv(recv)
    data = message(args.mode, args.xid, args.size)
    send = cmid.reg_msgs(len(data))
    send.write(data, len(data))
    cmid.post_send(send)
    say(f"{args.mode}: sent {len(data)} bytes, xid {args.xid:#010x}")
    wc, why = bounded("send completion", cmid.get_send_comp, args.wait)
    say(why or f"send completion status {wc.status} ({'success' if wc.status == 0 else 'error'})")
    if args.mode == "rnr":
        time.sleep(args.recv_delay)
        cmid.post_recv(recv)
        say(f"receive posted {args.recv_delay} s after the call")
    wc, why = bounded("reply", cmid.get_recv_comp, args.wait)
    if why:
        say(why)
    elif wc.status != 0:
        say(f"receive completion status {wc.status}")
    else:
        say("reply: " + describe_reply(recv.read(wc.byte_len, 0), wc.byte_len))
    try:
        cmid.disconnect()
        say("disconnected")
    except Exception as exc:
        say(f"disconnect: {exc} (the server had already torn the connection down)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["vers2", "badchunk", "overrun", "rnr"])
    p.add_argument("--server", default="10.99.0.1")
    p.add_argument("--source", default=None, help="local address to bind")
    p.add_argument("--xid", type=lambda s: int(s, 0), default=0x5eed0001)
    p.add_argument("--size", type=int, default=8192, help="overrun: bytes to send")
    p.add_argument("--recv-delay", type=float, default=1.0, help="rnr: seconds before the receive")
    p.add_argument("--wait", type=float, default=5.0, help="seconds to wait for a completion")
    args = p.parse_args()
    try:
        return run(args)
    except Exception as exc:
        say(f"failed: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
