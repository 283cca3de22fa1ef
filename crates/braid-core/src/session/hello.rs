//! The handshake payloads (encrypted and authenticated by Noise):
//!
//! ```text
//! initiation: protocol (1) | timestamp_ns (8) | instance (7) | path (1) | path count (1) | role (1) * count | price (1) * count
//! response:   protocol (1) | instance (7)
//! ```
//!
//! `protocol` is [`PROTOCOL_VERSION`], read before anything else: what
//! follows it, and everything the session carries after the handshake,
//! is that version's. Peers of different versions cannot talk, so a server
//! that reads another version answers with its own and keeps nothing, and
//! each side reports the mismatch ([`Event::ProtocolMismatch`]) instead of
//! failing later on packets it misreads or waiting out a silent peer.
//!
//! `timestamp_ns` is wall-clock time; a server accepts an initiation only
//! if it is newer than the last one it accepted from that client, so a
//! recorded initiation cannot be replayed. `instance` is drawn at random
//! (56 bits, [`INSTANCE_MASK`]) when a session is created: a different
//! value in a later handshake means the peer restarted and its stream
//! state is new. `path` is the path the initiation was sent on; the roles
//! tell the server how to use each path, and the prices which paths cost
//! more than others: each path's rank among the distinct costs the client
//! was given (0 the cheapest), which is all the cost-first scheduler reads.
//! The version took the instance's top byte, so the payloads kept their
//! sizes.

use super::config::{PathRole, MAX_SESSION_PATHS};
#[cfg(doc)]
use super::Event;

/// The version of braid's session protocol: the handshake payloads, the
/// frames inside transport messages, the data messages, the bonding data
/// header and the reliable stream's packets. Raised whenever any of them
/// changes.
pub const PROTOCOL_VERSION: u8 = 4;

/// The bits of a session's random instance number the handshake carries.
pub(crate) const INSTANCE_MASK: u64 = (1 << 56) - 1;

/// Bytes of an initiation between its version and its roles and prices.
const INITIATION_FIXED_LEN: usize = 17;
/// Bytes of a response.
const RESPONSE_LEN: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Initiation {
    pub timestamp_ns: u64,
    pub instance: u64,
    pub path: u8,
    pub roles: Vec<PathRole>,
    /// Each path's price rank, as many as `roles` (see [`price_ranks`]).
    pub prices: Vec<u8>,
}

/// Each cost's rank among the distinct values of `costs` (0 the lowest):
/// the order and the ties of the costs, in a byte each.
pub(crate) fn price_ranks(costs: &[f64]) -> Vec<u8> {
    let mut distinct: Vec<f64> = costs.to_vec();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup_by(|a, b| a.total_cmp(b).is_eq());
    costs
        .iter()
        .map(|c| {
            let rank = distinct.partition_point(|d| d.total_cmp(c).is_lt());
            u8::try_from(rank).unwrap_or(u8::MAX)
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HelloError {
    /// The payload does not parse as this version's.
    Malformed,
    /// The peer speaks this other protocol version.
    Protocol(u8),
}

/// Checks the version byte that starts every payload.
fn check_version(b: &[u8]) -> Result<&[u8], HelloError> {
    match b.split_first() {
        None => Err(HelloError::Malformed),
        Some((&PROTOCOL_VERSION, rest)) => Ok(rest),
        Some((&other, _)) => Err(HelloError::Protocol(other)),
    }
}

impl Initiation {
    pub fn encode(&self) -> Vec<u8> {
        debug_assert_eq!(self.roles.len(), self.prices.len());
        let mut out = Vec::with_capacity(1 + INITIATION_FIXED_LEN + 2 * self.roles.len());
        out.push(PROTOCOL_VERSION);
        out.extend_from_slice(&self.timestamp_ns.to_be_bytes());
        out.extend_from_slice(&self.instance.to_be_bytes()[1..]);
        out.push(self.path);
        out.push(self.roles.len() as u8);
        out.extend(self.roles.iter().map(|r| r.to_wire()));
        out.extend_from_slice(&self.prices);
        out
    }

    pub fn decode(b: &[u8]) -> Result<Initiation, HelloError> {
        let b = check_version(b)?;
        let bad = HelloError::Malformed;
        if b.len() < INITIATION_FIXED_LEN {
            return Err(bad);
        }
        let count = usize::from(b[16]);
        if count == 0 || count > MAX_SESSION_PATHS || b.len() != INITIATION_FIXED_LEN + 2 * count {
            return Err(bad);
        }
        let path = b[15];
        if usize::from(path) >= count {
            return Err(bad);
        }
        let (roles, prices) = b[INITIATION_FIXED_LEN..].split_at(count);
        let roles = roles
            .iter()
            .map(|&r| PathRole::from_wire(r).ok_or(bad))
            .collect::<Result<Vec<_>, _>>()?;
        // A rank names one of the paths' distinct costs.
        if prices.iter().any(|&r| usize::from(r) >= count) {
            return Err(bad);
        }
        Ok(Initiation {
            timestamp_ns: u64::from_be_bytes(b[0..8].try_into().expect("8 bytes")),
            instance: be56(&b[8..15]),
            path,
            roles,
            prices: prices.to_vec(),
        })
    }
}

pub(crate) fn encode_response(instance: u64) -> [u8; RESPONSE_LEN] {
    let mut out = instance.to_be_bytes();
    out[0] = PROTOCOL_VERSION;
    out
}

pub(crate) fn decode_response(b: &[u8]) -> Result<u64, HelloError> {
    match check_version(b)? {
        rest if rest.len() == RESPONSE_LEN - 1 => Ok(be56(rest)),
        _ => Err(HelloError::Malformed),
    }
}

/// A big-endian number of 7 bytes.
fn be56(b: &[u8]) -> u64 {
    b.iter().fold(0, |n, &byte| (n << 8) | u64::from(byte))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_rejection() {
        let bad = Err(HelloError::Malformed);
        let hello = Initiation {
            timestamp_ns: 5,
            instance: 0x00ff_0102_0304_0506,
            path: 1,
            roles: vec![PathRole::Primary, PathRole::Backup],
            prices: vec![1, 0],
        };
        let good = hello.encode();
        assert_eq!(good.len(), 1 + 17 + 2 + 2);
        assert_eq!(good[0], PROTOCOL_VERSION);
        assert_eq!(Initiation::decode(&good), Ok(hello));
        assert_eq!(Initiation::decode(&good[..17]), bad);
        assert_eq!(Initiation::decode(&[]), bad);
        let mut extra = good.clone();
        extra.push(0);
        assert_eq!(Initiation::decode(&extra), bad);
        let mut zero = good[..18].to_vec();
        zero[17] = 0;
        assert_eq!(Initiation::decode(&zero), bad);
        let mut path = good.clone();
        path[16] = 2;
        assert_eq!(Initiation::decode(&path), bad);
        let mut role = good.clone();
        role[19] = 3;
        assert_eq!(Initiation::decode(&role), bad);
        // A price rank beyond the paths' count names no cost.
        let mut price = good.clone();
        price[21] = 2;
        assert_eq!(Initiation::decode(&price), bad);
        let mut no_prices = good.clone();
        no_prices.truncate(20);
        assert_eq!(Initiation::decode(&no_prices), bad);
        let mut many = good[..18].to_vec();
        many[17] = (MAX_SESSION_PATHS + 1) as u8;
        many.resize(18 + 2 * (MAX_SESSION_PATHS + 1), 0);
        many[16] = 0;
        assert_eq!(Initiation::decode(&many), bad);
        many.truncate(18 + 2 * MAX_SESSION_PATHS);
        many[17] = MAX_SESSION_PATHS as u8;
        assert!(Initiation::decode(&many).is_ok());
        assert_eq!(encode_response(0x00ab_0000_0000_0001).len(), 8);
        assert_eq!(
            decode_response(&encode_response(0x00ab_0000_0000_0001)),
            Ok(0x00ab_0000_0000_0001)
        );
        let short = encode_response(9);
        assert_eq!(decode_response(&short[..7]), Err(HelloError::Malformed));
        assert_eq!(decode_response(&[]), Err(HelloError::Malformed));
    }

    #[test]
    fn prices_keep_the_order_and_the_ties_of_the_costs() {
        assert_eq!(price_ranks(&[1.0, 0.5, 1.0, 2.0]), [1, 0, 1, 2]);
        assert_eq!(price_ranks(&[0.0, 0.0, 0.0]), [0, 0, 0]);
        assert_eq!(price_ranks(&[0.3]), [0]);
        let sixteen: Vec<f64> = (0..16).rev().map(f64::from).collect();
        let ranks: Vec<u8> = (0..16).rev().collect();
        assert_eq!(price_ranks(&sixteen), ranks);
    }

    #[test]
    fn another_version_is_named_before_anything_else_is_read() {
        let mut init = Initiation {
            timestamp_ns: 5,
            instance: 6,
            path: 0,
            roles: vec![PathRole::Primary],
            prices: vec![0],
        }
        .encode();
        init[0] = PROTOCOL_VERSION + 1;
        assert_eq!(
            Initiation::decode(&init),
            Err(HelloError::Protocol(PROTOCOL_VERSION + 1))
        );
        // Whatever follows: another version's payload has its own layout.
        assert_eq!(Initiation::decode(&[7]), Err(HelloError::Protocol(7)));
        let mut resp = encode_response(9);
        resp[0] = 0;
        assert_eq!(decode_response(&resp), Err(HelloError::Protocol(0)));
        assert_eq!(decode_response(&[200, 1]), Err(HelloError::Protocol(200)));
    }
}
