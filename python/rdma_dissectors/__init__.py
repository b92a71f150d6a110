"""Dissectors for RoCEv2, InfiniBand CM, RPC-over-RDMA (RFC 8166, RFC 8797),
ONC RPC and NFS, from the Rust crate ``rdma-dissectors``.

Every frame is a ``dict`` with the keys of ``rdma-analyzer frames --json``
(schema version ``SCHEMA_VERSION``)::

    import rdma_dissectors as rd

    d = rd.dissect(frame_bytes)                 # Ethernet by default
    if "rpcrdma" in d:
        print(hex(d["rpcrdma"]["xid"]), d["rpcrdma"]["credits"])

    for d in rd.read_capture("captures/v3-ddp.pcap"):   # pcap or pcapng, streamed
        ...
"""

from ._native import (
    Capture,
    LINKTYPE_ETHERNET,
    LINKTYPE_INFINIBAND,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
    SCHEMA_VERSION,
    dissect,
)

__all__ = [
    "Capture",
    "LINKTYPE_ETHERNET",
    "LINKTYPE_INFINIBAND",
    "LINKTYPE_LINUX_SLL",
    "LINKTYPE_LINUX_SLL2",
    "LINKTYPE_RAW",
    "SCHEMA_VERSION",
    "dissect",
    "read_capture",
]


def read_capture(path, *, rocev2_port=4791, verify_icrc=True):
    """Iterates over the frames of a pcap or pcapng file, one dict each."""
    return Capture(path, rocev2_port=rocev2_port, verify_icrc=verify_icrc)
