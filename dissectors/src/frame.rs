//! One captured frame, as every stage from the capture reader to the
//! correlation engine and the per-frame outputs sees it.
//!
//! It lives here, under the readers and the engine alike, so that both can
//! name it without the engine depending on the capture crate's I/O.

use crate::ib::icrc::IcrcStatus;
use crate::link::LinkType;
use crate::stack::{self, Config, Dissection};

/// A captured frame and what is known of it before it is dissected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// 1-based frame number, as tshark counts them.
    pub number: u64,
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// The link type of the interface it was captured on.
    pub link: LinkType,
    /// Length of the frame on the wire (more than `data.len()` when the
    /// capture's snap length cut it).
    pub orig_len: u32,
    /// The captured bytes.
    pub data: &'a [u8],
    /// The RoCEv2 ICRC verdict, when a reading thread already checked it
    /// ([`stack::rocev2_icrc_status`]); `None` leaves it to the dissection.
    pub icrc: Option<IcrcStatus>,
}

impl<'a> Frame<'a> {
    /// Dissects the frame into `d`, checking the ICRC only when no reading
    /// thread did: a verdict found there is put back in place of the
    /// unchecked one, so every consumer sees the same dissection whichever
    /// thread had time to check.
    #[inline]
    pub fn dissect_into(&self, config: &Config, d: &mut Dissection<'a>) {
        let config = config.with_verify_icrc(self.icrc.is_none() && config.verify_icrc);
        stack::dissect_into(self.link, self.data, &config, d);
        if self.icrc.is_some() {
            d.icrc = self.icrc;
        }
    }

    /// Checks the RoCEv2 ICRC now (on a thread that has time), so that
    /// [`Frame::dissect_into`] need not; frames that are not RoCEv2 keep
    /// `None` and are left to the dissection.
    #[inline]
    pub fn check_icrc(&mut self, config: &Config) {
        self.icrc = stack::rocev2_icrc_status(self.link, self.data, config);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frame 30 of captures/v3-inline.pcap (the crate's example): a RoCEv2
    /// RC Acknowledge whose ICRC is right.
    const ACK: &[u8] = &[
        0x52, 0x54, 0x00, 0x99, 0x00, 0x02, 0x52, 0x54, 0x00, 0x99, 0x00, 0x01, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x30, 0x23, 0xe8, 0x40, 0x00, 0x40, 0x11, 0x02, 0x0d, 0x0a, 0x63, 0x00, 0x01,
        0x0a, 0x63, 0x00, 0x02, 0xd9, 0xf2, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff,
        0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0x43, 0x0a, 0xc5, 0x1f, 0x00, 0x00, 0x01, 0xe0, 0xc4,
        0x06, 0x51,
    ];

    fn ack(icrc: Option<IcrcStatus>) -> Frame<'static> {
        Frame {
            number: 30,
            ts_ns: 1,
            link: LinkType::ETHERNET,
            orig_len: ACK.len() as u32,
            data: ACK,
            icrc,
        }
    }

    #[test]
    fn an_unchecked_frame_gets_its_icrc_verified_by_the_dissection() {
        let mut d = Dissection::default();
        ack(None).dissect_into(&Config::default(), &mut d);
        assert_eq!(d.icrc, Some(IcrcStatus::Valid));
    }

    #[test]
    fn a_verdict_found_by_the_reader_replaces_the_dissections_own() {
        // A verdict the bytes would not give: it can only have come from
        // the frame, so the dissection did not compute one over it.
        let said = IcrcStatus::Invalid {
            found: 1,
            computed: 2,
        };
        let mut d = Dissection::default();
        ack(Some(said)).dissect_into(&Config::default(), &mut d);
        assert_eq!(d.icrc, Some(said));
        assert!(d.bth().is_some(), "the rest is dissected as usual");
    }

    #[test]
    fn with_verification_off_an_unchecked_frame_has_no_verdict() {
        let mut d = Dissection::default();
        let config = Config::default().with_verify_icrc(false);
        ack(None).dissect_into(&config, &mut d);
        assert_eq!(d.icrc, None);
    }

    #[test]
    fn checking_ahead_gives_the_verdict_the_dissection_would() {
        let mut f = ack(None);
        f.check_icrc(&Config::default());
        assert_eq!(f.icrc, Some(IcrcStatus::Valid));
        let mut not_rocev2 = Frame {
            data: &ACK[..20],
            ..ack(None)
        };
        not_rocev2.check_icrc(&Config::default());
        assert_eq!(not_rocev2.icrc, None);
    }
}
