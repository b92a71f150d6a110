//! The frames to send: the RoCEv2 frames of a capture (Ethernet link),
//! grouped by host pair so that a sender thread keeps each conversation's
//! order, and rewritten per pass (`--vary`) so that each pass looks like new
//! connections rather than retransmissions.

use anyhow::bail;
use rdma_capture::input::Input;
use rdma_dissectors::ib::icrc::rocev2_icrc;
use rdma_dissectors::link::LinkType;

/// RoCEv2's UDP destination port.
const ROCEV2_PORT: u16 = 4791;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const IPPROTO_UDP: u8 = 17;

/// Frames in one buffer: `data[ranges[i].0 .. ranges[i].0 + ranges[i].1]`.
#[derive(Default, Clone)]
pub struct Frames {
    /// Every frame's bytes, one after another.
    pub data: Vec<u8>,
    /// (offset, length) of each frame in `data`.
    pub ranges: Vec<(usize, usize)>,
    /// Where each frame's IPv4 header starts, when it is IPv4 (for `--vary`).
    pub ipv4_at: Vec<Option<usize>>,
}

impl Frames {
    fn push(&mut self, frame: &[u8], ipv4_at: Option<usize>) {
        self.ranges.push((self.data.len(), frame.len()));
        self.data.extend_from_slice(frame);
        self.ipv4_at.push(ipv4_at);
    }

    /// Bytes of frame `i`.
    #[cfg(test)]
    pub fn get(&self, i: usize) -> &[u8] {
        let (o, l) = self.ranges[i];
        &self.data[o..o + l]
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// No frames.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Moves every IPv4 frame from pass `from` to pass `to` (see
    /// [`pass_bytes`]): both addresses change, the IPv4 checksum and the
    /// ICRC are computed again. IPv6 frames are sent unchanged.
    pub fn repass(&mut self, from: u64, to: u64) {
        let (f, t) = (pass_bytes(from), pass_bytes(to));
        let delta = [f[0] ^ t[0], f[1] ^ t[1]];
        for i in 0..self.ranges.len() {
            let (Some(ip), (o, l)) = (self.ipv4_at[i], self.ranges[i]) else {
                continue;
            };
            let frame = &mut self.data[o..o + l];
            let ihl = usize::from(frame[ip] & 0x0f) * 4;
            // Source and destination addresses: their 2nd and 3rd bytes.
            for a in [ip + 12, ip + 16] {
                frame[a + 1] ^= delta[0];
                frame[a + 2] ^= delta[1];
            }
            frame[ip + 10] = 0;
            frame[ip + 11] = 0;
            let sum = ipv4_checksum(&frame[ip..ip + ihl]);
            frame[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
            let udp = ip + ihl;
            let udp_len = usize::from(u16::from_be_bytes([frame[udp + 4], frame[udp + 5]]));
            let end = udp + udp_len;
            if udp_len < 8 + 12 + 4 || end > frame.len() {
                continue;
            }
            let icrc = rocev2_icrc(
                &frame[ip..udp],
                &frame[udp..udp + 8],
                &frame[udp + 8..end - 4],
            );
            frame[end - 4..end].copy_from_slice(&icrc.to_le_bytes());
        }
    }
}

/// What pass `k` XORs into the 2nd and 3rd bytes of both IPv4 addresses:
/// pass 0 is the capture as it is; 65,536 passes differ.
pub fn pass_bytes(k: u64) -> [u8; 2] {
    [(k >> 8) as u8, k as u8]
}

fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Where a RoCEv2 frame's IP header starts, its version and the host pair
/// (addresses, smaller first); `None` for any other frame.
fn rocev2(frame: &[u8]) -> Option<(usize, u8, Vec<u8>)> {
    let mut at = 12;
    let mut ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
    while ethertype == ETHERTYPE_VLAN {
        at += 4;
        ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
    }
    let ip = at + 2;
    let (udp, version, a, b) = match ethertype {
        ETHERTYPE_IPV4 => {
            let ihl = usize::from(frame.get(ip)? & 0x0f) * 4;
            if *frame.get(ip + 9)? != IPPROTO_UDP || ihl < 20 {
                return None;
            }
            (
                ip + ihl,
                4,
                frame.get(ip + 12..ip + 16)?,
                frame.get(ip + 16..ip + 20)?,
            )
        }
        ETHERTYPE_IPV6 => {
            if *frame.get(ip + 6)? != IPPROTO_UDP {
                return None;
            }
            (
                ip + 40,
                6,
                frame.get(ip + 8..ip + 24)?,
                frame.get(ip + 24..ip + 40)?,
            )
        }
        _ => return None,
    };
    let dport = u16::from_be_bytes([*frame.get(udp + 2)?, *frame.get(udp + 3)?]);
    if dport != ROCEV2_PORT {
        return None;
    }
    let pair = if a <= b {
        [a, b].concat()
    } else {
        [b, a].concat()
    };
    Some((ip, version, pair))
}

/// Reads a capture (pcap or pcapng, plain or compressed: the analyzer's own
/// reader, `rdma-capture`) whose frames are Ethernet, and splits its RoCEv2
/// frames (every frame with `all`) over `groups` groups, each host pair
/// whole in one group, in capture order.
///
/// # Errors
/// When the file cannot be read, holds a frame of another link type, or
/// holds no frame to send. A capture damaged part-way is an error too: a
/// benchmark replaying only part of its input would measure something else.
pub fn load(path: &std::path::Path, groups: usize, all: bool) -> anyhow::Result<Vec<Frames>> {
    let mut reader = Input::open(path).and_then(Input::reader)?;
    let mut out = vec![Frames::default(); groups.max(1)];
    let mut pairs: Vec<Vec<u8>> = Vec::new();
    while let Some(p) = reader.next_packet()? {
        if p.link != LinkType::ETHERNET {
            bail!(
                "{}: frame {} has link type {} ({}); only Ethernet frames can be replayed",
                path.display(),
                p.number,
                p.link.0,
                p.link.name().unwrap_or("unknown")
            );
        }
        let frame = p.data;
        let (group, ipv4_at) = match rocev2(frame) {
            Some((ip, version, pair)) => {
                let n = pairs.iter().position(|q| *q == pair).unwrap_or_else(|| {
                    pairs.push(pair);
                    pairs.len() - 1
                });
                (n % out.len(), (version == 4).then_some(ip))
            }
            None if all => (0, None),
            None => continue,
        };
        out[group].push(frame, ipv4_at);
    }
    if out.iter().all(Frames::is_empty) {
        bail!("{}: no RoCEv2 frame to send", path.display());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma_dissectors::ib::icrc::{check_rocev2_packet, IcrcStatus};

    /// A RoCEv2 frame (Ethernet, IPv4, UDP, BTH, 4 payload bytes, ICRC) with
    /// a correct checksum and ICRC.
    fn frame() -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8 + 12 + 4 + 4];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let ip = 14;
        f[ip] = 0x45;
        f[ip + 2..ip + 4].copy_from_slice(&(20u16 + 8 + 12 + 4 + 4).to_be_bytes());
        f[ip + 8] = 64;
        f[ip + 9] = IPPROTO_UDP;
        f[ip + 12..ip + 16].copy_from_slice(&[10, 99, 0, 2]);
        f[ip + 16..ip + 20].copy_from_slice(&[10, 99, 0, 1]);
        let udp = ip + 20;
        f[udp + 2..udp + 4].copy_from_slice(&ROCEV2_PORT.to_be_bytes());
        f[udp + 4..udp + 6].copy_from_slice(&(8u16 + 12 + 4 + 4).to_be_bytes());
        f[udp + 8] = 0x04; // SEND Only
        f[udp + 8 + 5..udp + 8 + 8].copy_from_slice(&[0, 0, 0x11]);
        f[udp + 8 + 12..udp + 8 + 16].copy_from_slice(b"rpc!");
        let mut fr = Frames::default();
        fr.push(&f, Some(ip));
        // From pass 0 to pass 0: only the checksum and the ICRC are computed.
        fr.repass(0, 0);
        fr.get(0).to_vec()
    }

    #[test]
    fn a_pass_changes_the_addresses_and_keeps_checksum_and_icrc_valid() {
        let f = frame();
        let mut fr = Frames::default();
        fr.push(&f, Some(14));
        for (from, to) in [(0, 1), (1, 0x0203), (0x0203, 0)] {
            fr.repass(from, to);
            let g = fr.get(0);
            let [x, y] = pass_bytes(to);
            assert_eq!(&g[26..30], &[10, 99 ^ x, y, 2]);
            assert_eq!(&g[30..34], &[10, 99 ^ x, y, 1]);
            assert_eq!(ipv4_checksum(&g[14..34]), 0, "pass {to}: IPv4 checksum");
            let status = check_rocev2_packet(&g[14..], 20, true);
            assert!(matches!(status, IcrcStatus::Valid), "pass {to}: {status:?}");
        }
        assert_eq!(fr.get(0), &f[..], "back to pass 0: the original bytes");
    }

    #[test]
    fn only_rocev2_frames_are_kept_and_grouped_by_host_pair() {
        let f = frame();
        let mut reply = f.clone();
        reply[26..34].copy_from_slice(&[10, 99, 0, 1, 10, 99, 0, 2]);
        let mut other = f.clone();
        other[26..30].copy_from_slice(&[10, 99, 0, 3]);
        let mut not_roce = f.clone();
        not_roce[36..38].copy_from_slice(&53u16.to_be_bytes());
        let key = |x: &[u8]| rocev2(x).map(|(_, _, p)| p);
        assert_eq!(key(&f), key(&reply));
        assert_ne!(key(&f), key(&other));
        assert_eq!(key(&not_roce), None);
    }

    fn bundled(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../captures")
            .join(name)
    }

    #[test]
    fn a_compressed_capture_loads_the_same_frames_as_the_plain_one() {
        let plain = bundled("v3-inline.pcap");
        let dir = std::env::temp_dir().join(format!("rategen-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gz = dir.join("v3-inline.pcap.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, &std::fs::read(&plain).unwrap()).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        let a = load(&plain, 2, true).unwrap();
        let b = load(&gz, 2, true).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let total: usize = a.iter().map(Frames::len).sum();
        // v3-inline.pcap's 54 frames are all RoCEv2 (captures/README.md).
        assert!(total > 0);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((&x.data, &x.ranges), (&y.data, &y.ranges));
        }
    }

    #[test]
    fn a_capture_of_another_link_type_is_refused_naming_the_frame() {
        let dir = std::env::temp_dir().join(format!("rategen-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("raw.pcap");
        // A classic pcap of link type 101 (raw IP) with one 20-byte record.
        let mut b = Vec::new();
        b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&4u16.to_le_bytes());
        for w in [0u32, 0, 65535, 101, 0, 0, 20, 20] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(&[0x45; 20]);
        std::fs::write(&path, b).unwrap();
        let Err(err) = load(&path, 1, true) else {
            panic!("a raw-IP capture loaded");
        };
        let err = err.to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("frame 1") && err.contains("101"), "{err}");
    }
}
