//! Explicit Congestion Notification (RFC 3168) on an inner IP packet.
//!
//! A tunnel's flow queue is the bottleneck queue of the flows inside it,
//! and its CoDel tells a sender to slow down. A drop does that at a price:
//! the receiving application waits a round trip for the retransmission
//! while everything behind the hole waits with it. A sender that asked for
//! ECN (its packets are ECN-capable) reacts to a Congestion Experienced
//! mark as to a loss, without that wait, so CoDel marks such packets
//! instead of dropping them, as Linux's fq_codel does by default.

/// The ECN field's bits: Not-ECT 00, ECT(1) 01, ECT(0) 10, CE 11.
const ECN_MASK: u8 = 0b11;
const CE: u8 = 0b11;

/// Marks an ECN-capable IPv4 or IPv6 packet Congestion Experienced (an
/// IPv4 header's checksum is updated to match). Returns whether the packet
/// now carries the mark: `false` for a packet whose transport did not ask
/// for ECN (Not-ECT), which only a drop can slow down, and for anything too
/// short to be an IP packet or of another IP version.
pub fn mark_congestion_experienced(packet: &mut [u8]) -> bool {
    match packet.first().map(|b| b >> 4) {
        // Marking a packet already marked changes nothing, its checksum
        // included.
        Some(4) if packet.len() >= 20 => match packet[1] & ECN_MASK {
            0 => false,
            _ => {
                let before = u16::from_be_bytes([packet[0], packet[1]]);
                packet[1] |= CE;
                let after = u16::from_be_bytes([packet[0], packet[1]]);
                let checksum = u16::from_be_bytes([packet[10], packet[11]]);
                let updated = updated_checksum(checksum, before, after);
                packet[10..12].copy_from_slice(&updated.to_be_bytes());
                true
            }
        },
        // The traffic class straddles bytes 0 and 1; its ECN bits are
        // bits 5 and 4 of byte 1. IPv6 has no header checksum.
        Some(6) if packet.len() >= 40 => match (packet[1] >> 4) & ECN_MASK {
            0 => false,
            _ => {
                packet[1] |= CE << 4;
                true
            }
        },
        _ => false,
    }
}

/// An Internet checksum after one of the 16-bit words it covers changed
/// from `before` to `after` (RFC 1624, equation 3).
fn updated_checksum(checksum: u16, before: u16, after: u16) -> u16 {
    let sum = u32::from(!checksum) + u32::from(!before) + u32::from(after);
    // Three 16-bit terms sum to under 0x30000: two folds of the carry
    // bring any such sum under 0x10000.
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checksum of an IPv4 header computed from scratch.
    fn header_checksum(header: &[u8]) -> u16 {
        let mut sum: u32 = header
            .chunks(2)
            .enumerate()
            .filter(|(i, _)| *i != 5)
            .map(|(_, w)| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn v4(tos: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, tos, 0x05, 0xdc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 77, 0, 2, 10, 77,
            0, 1,
        ];
        let c = header_checksum(&p);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p.extend_from_slice(&[0xab; 32]);
        p
    }

    fn v6(traffic_class: u8) -> Vec<u8> {
        let mut p = vec![0u8; 60];
        p[0] = 0x60 | (traffic_class >> 4);
        p[1] = (traffic_class << 4) | 0x0a;
        p[6] = 6;
        p
    }

    #[test]
    fn an_ecn_capable_ipv4_packet_is_marked_and_its_checksum_stays_right() {
        // DSCP 46 (EF) beside each code point, so the mark is seen not to
        // touch the other bits.
        for ecn in [0b01, 0b10] {
            let mut p = v4(46 << 2 | ecn);
            let rest = p[2..].to_vec();
            assert!(mark_congestion_experienced(&mut p));
            assert_eq!(p[1], 46 << 2 | CE);
            assert_eq!(p[0], 0x45);
            assert_eq!(&p[2..10], &rest[..8]);
            assert_eq!(&p[12..], &rest[10..]);
            let carried = u16::from_be_bytes([p[10], p[11]]);
            assert_eq!(carried, header_checksum(&p[..20]), "ecn {ecn:02b}");
        }
    }

    #[test]
    fn the_checksum_update_holds_for_every_header_word() {
        // Every TOS byte with an ECT code point, beside a few first bytes:
        // the incremental update agrees with a checksum computed afresh.
        for tos in (0u8..=255).filter(|t| matches!(t & ECN_MASK, 0b01 | 0b10)) {
            for ihl_byte in [0x45u8, 0x46, 0x4f] {
                let mut p = v4(tos);
                p[0] = ihl_byte;
                let c = header_checksum(&p[..20]);
                p[10..12].copy_from_slice(&c.to_be_bytes());
                assert!(mark_congestion_experienced(&mut p));
                let carried = u16::from_be_bytes([p[10], p[11]]);
                assert_eq!(carried, header_checksum(&p[..20]), "tos {tos:#x}");
            }
        }
    }

    #[test]
    fn the_checksum_update_carries_twice_when_it_must() {
        // Words summing to 0xffff (checksum 0); one word goes from 0 to 1:
        // the sum becomes 0x10000, whose carry folds back to 1.
        assert_eq!(updated_checksum(0x0000, 0x0000, 0x0001), 0xfffe);
        // The largest terms: 0xffff * 2 + 0xfffe folds to 0xfffe + 2.
        assert_eq!(updated_checksum(0x0000, 0x0000, 0xfffe), 0x0001);
        // No change, no change.
        assert_eq!(updated_checksum(0x1234, 0xbeef, 0xbeef), 0x1234);
    }

    #[test]
    fn a_packet_that_did_not_ask_for_ecn_is_left_alone() {
        let mut p = v4(46 << 2);
        let before = p.clone();
        assert!(!mark_congestion_experienced(&mut p));
        assert_eq!(p, before);
        let mut p = v6(46 << 2);
        let before = p.clone();
        assert!(!mark_congestion_experienced(&mut p));
        assert_eq!(p, before);
    }

    #[test]
    fn a_packet_already_marked_counts_as_marked_unchanged() {
        for mut p in [v4(CE), v6(CE)] {
            let before = p.clone();
            assert!(mark_congestion_experienced(&mut p));
            assert_eq!(p, before);
        }
    }

    #[test]
    fn an_ecn_capable_ipv6_packet_is_marked_in_its_traffic_class() {
        for ecn in [0b01, 0b10] {
            let mut p = v6(46 << 2 | ecn);
            let rest = p[2..].to_vec();
            assert!(mark_congestion_experienced(&mut p));
            let traffic_class = (p[0] & 0x0f) << 4 | p[1] >> 4;
            assert_eq!(traffic_class, 46 << 2 | CE);
            assert_eq!(p[0] >> 4, 6);
            assert_eq!(p[1] & 0x0f, 0x0a, "flow label untouched");
            assert_eq!(&p[2..], &rest[..]);
        }
    }

    #[test]
    fn anything_else_is_not_marked_and_not_touched() {
        let mut short_v4 = v4(0b10)[..19].to_vec();
        let mut short_v6 = v6(0b10)[..39].to_vec();
        let mut other = v4(0b10);
        other[0] = 0x55;
        for p in [&mut short_v4, &mut short_v6, &mut other, &mut Vec::new()] {
            let before = p.clone();
            assert!(!mark_congestion_experienced(p));
            assert_eq!(*p, before);
        }
    }
}
