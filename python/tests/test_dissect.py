"""Tests of the Python binding: one frame by hand, and every frame of the
bundled captures against `rdma-analyzer frames --json` (the same schema,
so the dicts must be equal, key for key)."""

import glob
import json
import os
import pathlib
import shutil
import subprocess

import pytest

import rdma_dissectors as rd

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLED = sorted(glob.glob(str(ROOT / "captures" / "*.pcap")))
# Third-party captures (pcapng, native InfiniBand), where the checkout has
# them beside it, as scripts/golden.sh uses them.
# The third-party captures, read in place; scripts/test.sh points
# RDMA_EXTERNAL_CAPTURES at them for a clone made elsewhere.
EXTERNAL_DIR = os.environ.get("RDMA_EXTERNAL_CAPTURES") or str(ROOT.parent / "shared" / "external-captures")
EXTERNAL = sorted(glob.glob(os.path.join(EXTERNAL_DIR, "*.pcap*")))
CAPTURES = BUNDLED + EXTERNAL
# The analyzer binary the comparison runs; scripts/test.sh points this at
# the one it built. Missing is a failure, not a skip.
ANALYZER = os.environ.get("RDMA_ANALYZER", str(ROOT / "target" / "debug" / "rdma-analyzer"))

# Frame 30 of captures/v3-inline.pcap: the NFS server's RC Acknowledge.
RC_ACK = bytes.fromhex(
    "525400990002 525400990001 0800"  # Ethernet
    " 4500003023e840004011020d0a6300010a630002"  # IPv4
    " d9f212b7001c0000"  # UDP to 4791
    " 1100ffff0000001100430ac5"  # BTH: RC Acknowledge
    " 1f000001"  # AETH: ACK, MSN 1
    " e0c40651"  # ICRC
)


def frames_json(path):
    assert os.access(ANALYZER, os.X_OK), f"{ANALYZER} missing: build rdma-analyzer first (cargo build)"
    out = subprocess.run([ANALYZER, "frames", "--json", path], check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_one_frame():
    d = rd.dissect(RC_ACK)
    assert d["schema_version"] == rd.SCHEMA_VERSION == 2
    assert d["frame"] == 1 and d["ts_ns"] == "0" and d["len"] == len(RC_ACK)
    assert d["eth"] == {"dst": "52:54:00:99:00:02", "ether_type": 0x800, "src": "52:54:00:99:00:01", "vlan": []}
    assert d["ip"]["src"] == "10.99.0.1" and d["ip"]["version"] == 4
    assert d["bth"]["opcode_name"] == "RC Acknowledge"
    assert d["bth"]["dest_qp"] == 0x11 and d["bth"]["psn"] == 0x430AC5
    assert d["aeth"] == {"credit_count": 31, "kind": "ack", "msn": 1, "syndrome": 31}
    assert d["icrc"] == "valid"
    assert "error" not in d and "rpcrdma" not in d


def test_keyword_arguments():
    d = rd.dissect(RC_ACK, rd.LINKTYPE_ETHERNET, number=30, ts_ns=123, orig_len=99, verify_icrc=False)
    assert (d["frame"], d["ts_ns"], d["len"]) == (30, "123", 99)
    assert "icrc" not in d
    # Not RoCEv2 when 4791 is not the RoCEv2 port: UDP is the last layer.
    d = rd.dissect(RC_ACK, rocev2_port=4792)
    assert "udp" in d and "bth" not in d


def test_garbage_is_data_not_an_exception():
    d = rd.dissect(b"\x00" * 5)
    assert d["error"]["offset"] == 0 and "truncated" in d["error"]["message"]
    assert "error" in rd.dissect(b"")


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        rd.read_capture(str(tmp_path / "nope.pcap"))


def test_bundled_captures_are_there():
    assert len(BUNDLED) >= 7, BUNDLED


@pytest.mark.parametrize("path", CAPTURES, ids=[os.path.basename(p) for p in CAPTURES])
def test_capture_equals_frames_json(path):
    expected = frames_json(path)
    got = list(rd.read_capture(path))
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert g == e, f"frame {e['frame']}"


def test_pcapng_equals_pcap(tmp_path):
    """The pcapng reader: the same capture converted by editcap (nanosecond
    resolution kept) gives the same frames as the pcap through the analyzer."""
    editcap = shutil.which("editcap")
    assert editcap, "editcap missing (Debian package wireshark-common, installed with tshark)"
    src = str(ROOT / "captures" / "v3-ddp.pcap")
    ng = str(tmp_path / "v3-ddp.pcapng")
    subprocess.run([editcap, "-F", "pcapng", src, ng], check=True)
    assert list(rd.read_capture(ng)) == frames_json(src)


def test_fcs_capture_equals_the_capture_without_fcs(tmp_path):
    """A pcap whose link-type word says every frame ends in a 4-byte FCS
    (libpcap's LT_FCS bits) reads as the same frames as the capture without
    it: the binding trims the FCS as `frames --json` does (the one reader,
    rdma-capture), instead of handing it to the dissectors as payload."""
    import struct
    import zlib

    src = ROOT / "captures" / "v3-inline.pcap"
    raw = src.read_bytes()
    magic, vmaj, vmin, zone, sigfigs, snaplen, link = struct.unpack("<IHHiIII", raw[:24])
    assert magic in (0xA1B2C3D4, 0xA1B23C4D), "the bundled capture is little-endian pcap"
    # F bit (0x04000000) and the FCS length in 16-bit units in the top 4 bits.
    fcs_link = link | 0x0400_0000 | (2 << 28)
    out = bytearray(struct.pack("<IHHiIII", magic, vmaj, vmin, zone, sigfigs, snaplen + 4, fcs_link))
    at, n = 24, 0
    while at < len(raw):
        sec, frac, incl, orig = struct.unpack("<IIII", raw[at : at + 16])
        data = raw[at + 16 : at + 16 + incl]
        assert incl == orig, "the bundled capture is not cut"
        fcs = struct.pack("<I", zlib.crc32(data))
        out += struct.pack("<IIII", sec, frac, incl + 4, orig + 4) + data + fcs
        at += 16 + incl
        n += 1
    fcs_path = tmp_path / "v3-inline-fcs.pcap"
    fcs_path.write_bytes(bytes(out))
    got = list(rd.read_capture(str(fcs_path)))
    assert len(got) == n
    assert got == frames_json(str(src))
    assert frames_json(str(fcs_path)) == frames_json(str(src))


def test_compressed_capture_reads_like_the_plain_one(tmp_path):
    """gzip, as the analyzer reads it: the binding shares its reader."""
    import gzip

    src = ROOT / "captures" / "v3-inline.pcap"
    packed = tmp_path / "v3-inline.pcap.gz"
    packed.write_bytes(gzip.compress(src.read_bytes()))
    assert list(rd.read_capture(str(packed))) == frames_json(str(src))


def test_damaged_capture_raises_valueerror_naming_the_frame(tmp_path):
    """Frames before the damage come out; the error names where it is."""
    src = ROOT / "captures" / "v3-inline.pcap"
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(src.read_bytes()[:5000])
    got = []
    with pytest.raises(ValueError) as e:
        for d in rd.read_capture(str(cut)):
            got.append(d)
    assert got, "the whole frames before the cut are read"
    assert got == frames_json(str(src))[: len(got)]
    assert "cut.pcap" in str(e.value)
