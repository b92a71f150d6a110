#!/usr/bin/env python3
"""A userspace RPC-over-RDMA version 1 client (RFC 8166) that sends the
kernel NFS server, on purpose, what a correct Linux client never does, so
the lab can induce the diagnosis's causes that well-behaved peers hide.

    rpcrdma-peer.py SERVER_IP MODE [COUNT]

MODE:
  bad-version   calls with an RPC-over-RDMA header of version 2: the server
                answers RDMA_ERROR / ERR_VERS (RFC 8166 sections 5.3.2, 7.3.2)
  bad-chunk     calls whose Write list announces more segments than the
                message holds, and calls with an unknown procedure: the
                server answers RDMA_ERROR / ERR_CHUNK
  good          a correct NFSv3 NULL call (the baseline: a reply, no error)

Each call's reply is printed as hex with its header decoded, so the lab's
output says what the server did. Uses pyverbs (python3-pyverbs), which
wraps librdmacm's synchronous endpoint API: one RC queue pair, Sends and
Receives from registered buffers.
"""

import struct
import sys

from pyverbs.cmid import CMID, AddrInfo, ConnParam
from pyverbs.qp import QPCap, QPInitAttr
import pyverbs.cm_enums as ce
import pyverbs.enums as e

NFS_PROGRAM = 100003
RDMA_MSG, RDMA_ERROR = 0, 4
RECV_SIZE = 4096
RECVS = 4


def rpc_null_call(xid):
    """An ONC RPC CALL of NFSv3 NULL with AUTH_NONE (RFC 5531)."""
    return struct.pack(">IIIIIIIIII", xid, 0, 2, NFS_PROGRAM, 3, 0, 0, 0, 0, 0)


def transport_header(xid, vers=1, credits=1, proc=RDMA_MSG, write_list=b""):
    """xid, vers, credits, proc, then the read list (absent), the write
    list (given raw, or absent) and the reply chunk (absent)."""
    head = struct.pack(">IIII", xid, vers, credits, proc)
    read_list = struct.pack(">I", 0)
    writes = write_list if write_list else struct.pack(">I", 0)
    return head + read_list + writes + struct.pack(">I", 0)


def messages(mode, count):
    """(what, bytes) of each call the mode sends."""
    out = []
    for i in range(count):
        xid = 0x5EE10000 + i
        if mode == "bad-version":
            out.append(("version 2 header", transport_header(xid, vers=2) + rpc_null_call(xid)))
        elif mode == "bad-chunk":
            if i % 2 == 0:
                # One Write chunk claiming 1000 segments; none follow.
                lying = struct.pack(">II", 1, 1000)
                out.append(("write chunk of 1000 absent segments",
                            transport_header(xid, write_list=lying) + rpc_null_call(xid)))
            else:
                out.append(("unknown procedure 7", transport_header(xid, proc=7) + rpc_null_call(xid)))
        elif mode == "good":
            out.append(("NFSv3 NULL", transport_header(xid) + rpc_null_call(xid)))
        else:
            sys.exit(f"rpcrdma-peer: unknown mode {mode!r} (bad-version, bad-chunk, good)")
    return out


def describe(reply):
    if len(reply) < 16:
        return f"a {len(reply)}-byte message, shorter than a transport header"
    xid, vers, credits, proc = struct.unpack(">IIII", reply[:16])
    text = f"xid {xid:#010x} vers {vers} credits {credits} proc {proc}"
    if proc == RDMA_ERROR and len(reply) >= 20:
        (err,) = struct.unpack(">I", reply[16:20])
        name = {1: "ERR_VERS", 2: "ERR_CHUNK"}.get(err, f"error {err}")
        text += f" RDMA_ERROR {name}"
        if err == 1 and len(reply) >= 28:
            low, high = struct.unpack(">II", reply[20:28])
            text += f" (versions {low}..{high})"
    return text


def connect(server):
    try:
        ai = AddrInfo(dst=server, dst_service="20049", port_space=ce.RDMA_PS_TCP)
    except TypeError:
        ai = AddrInfo(dst=server, service="20049", port_space=ce.RDMA_PS_TCP)
    cap = QPCap(max_send_wr=4, max_recv_wr=RECVS, max_send_sge=1, max_recv_sge=1)
    cmid = CMID(creator=ai, qp_init_attr=QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap))
    # No RFC 8797 private data: the server then assumes 1024-byte inline
    # sizes for this client, which every message here fits.
    cmid.connect(ConnParam(resources=1, depth=1, retry=7, rnr_retry=7))
    return cmid


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    server, mode = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    cmid = connect(server)
    print(f"rpcrdma-peer: connected to {server}:20049", flush=True)
    recvs = [cmid.reg_msgs(RECV_SIZE) for _ in range(RECVS)]
    for mr in recvs:
        cmid.post_recv(mr)
    answered = 0
    for i, (what, msg) in enumerate(messages(mode, count)):
        # post_send sends the whole region: one region per message, sized to it.
        smr = cmid.reg_msgs(len(msg))
        smr.write(msg, len(msg))
        cmid.post_send(smr)
        wc = cmid.get_send_comp()
        print(f"sent {what}: {len(msg)} bytes, send status {wc.status if wc else '?'}", flush=True)
        wc = cmid.get_recv_comp()
        if wc is None or wc.status != 0:
            print(f"no reply: receive completion {wc.status if wc else 'none'}", flush=True)
            break
        mr = recvs[i % RECVS]
        reply = mr.read(wc.byte_len, 0)
        print(f"reply {wc.byte_len} bytes: {describe(reply)}: {reply.hex()}", flush=True)
        answered += 1
        cmid.post_recv(mr)
    cmid.disconnect()
    print(f"rpcrdma-peer: {answered} of {count} calls answered", flush=True)
    return 0 if answered == count else 1


if __name__ == "__main__":
    sys.exit(main())
