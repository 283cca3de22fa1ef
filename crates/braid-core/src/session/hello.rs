//! The handshake payloads (encrypted and authenticated by Noise):
//!
//! ```text
//! initiation: timestamp_ns (8) | instance (8) | path (1) | path count (1) | role (1) * count
//! response:   instance (8)
//! ```
//!
//! `timestamp_ns` is wall-clock time; a server accepts an initiation only
//! if it is newer than the last one it accepted from that client, so a
//! recorded initiation cannot be replayed. `instance` is drawn at random
//! when a session is created: a different value in a later handshake means
//! the peer restarted and its stream state is new. `path` is the path the
//! initiation was sent on; the roles tell the server how to use each path.

use super::config::{PathRole, MAX_SESSION_PATHS};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Initiation {
    pub timestamp_ns: u64,
    pub instance: u64,
    pub path: u8,
    pub roles: Vec<PathRole>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadPayload;

impl Initiation {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(18 + self.roles.len());
        out.extend_from_slice(&self.timestamp_ns.to_be_bytes());
        out.extend_from_slice(&self.instance.to_be_bytes());
        out.push(self.path);
        out.push(self.roles.len() as u8);
        out.extend(self.roles.iter().map(|r| r.to_wire()));
        out
    }

    pub fn decode(b: &[u8]) -> Result<Initiation, BadPayload> {
        if b.len() < 18 {
            return Err(BadPayload);
        }
        let count = usize::from(b[17]);
        if count == 0 || count > MAX_SESSION_PATHS || b.len() != 18 + count {
            return Err(BadPayload);
        }
        let path = b[16];
        if usize::from(path) >= count {
            return Err(BadPayload);
        }
        let roles = b[18..]
            .iter()
            .map(|&r| PathRole::from_wire(r).ok_or(BadPayload))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Initiation {
            timestamp_ns: u64::from_be_bytes(b[0..8].try_into().expect("8 bytes")),
            instance: u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")),
            path,
            roles,
        })
    }
}

pub(crate) fn encode_response(instance: u64) -> [u8; 8] {
    instance.to_be_bytes()
}

pub(crate) fn decode_response(b: &[u8]) -> Result<u64, BadPayload> {
    <[u8; 8]>::try_from(b)
        .map(u64::from_be_bytes)
        .map_err(|_| BadPayload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_rejection() {
        let hello = Initiation {
            timestamp_ns: 5,
            instance: 6,
            path: 1,
            roles: vec![PathRole::Primary, PathRole::Backup],
        };
        let good = hello.encode();
        assert_eq!(Initiation::decode(&good), Ok(hello));
        assert_eq!(Initiation::decode(&good[..17]), Err(BadPayload));
        let mut extra = good.clone();
        extra.push(0);
        assert_eq!(Initiation::decode(&extra), Err(BadPayload));
        let mut zero = good[..18].to_vec();
        zero[17] = 0;
        assert_eq!(Initiation::decode(&zero), Err(BadPayload));
        let mut path = good.clone();
        path[16] = 2;
        assert_eq!(Initiation::decode(&path), Err(BadPayload));
        let mut role = good.clone();
        role[19] = 3;
        assert_eq!(Initiation::decode(&role), Err(BadPayload));
        let mut many = good[..18].to_vec();
        many[17] = (MAX_SESSION_PATHS + 1) as u8;
        many.resize(18 + MAX_SESSION_PATHS + 1, 0);
        many[16] = 0;
        assert_eq!(Initiation::decode(&many), Err(BadPayload));
        many.truncate(18 + MAX_SESSION_PATHS);
        many[17] = MAX_SESSION_PATHS as u8;
        assert!(Initiation::decode(&many).is_ok());
        assert_eq!(decode_response(&encode_response(9)), Ok(9));
        assert_eq!(decode_response(&[0; 7]), Err(BadPayload));
    }
}
