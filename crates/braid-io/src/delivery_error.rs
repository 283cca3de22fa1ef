//! What the network said about datagrams a client path sent: the ICMP
//! errors the kernel queues for a socket that asked for them
//! (`IP_RECVERR`). Without them a datagram to a port nothing listens on,
//! or to a host no route reaches, is lost in silence, and the user learns
//! only that nothing answered.

use std::fmt;
use std::io;
use std::net::IpAddr;

use quinn_udp::{TransportError, TransportErrorPayload};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryProblem {
    /// Nothing listens on the destination's UDP port (ICMP port
    /// unreachable, or a firewall's reject that says the same).
    PortUnreachable,
    /// No route to the host or network, or administratively prohibited.
    Unreachable,
    Other,
}

impl DeliveryProblem {
    /// The kernel says "port unreachable" with ECONNREFUSED, in ICMP and
    /// ICMPv6 alike.
    fn of(payload: TransportErrorPayload, errno: i32) -> DeliveryProblem {
        match payload {
            TransportErrorPayload::Unreachable if errno == libc::ECONNREFUSED => {
                DeliveryProblem::PortUnreachable
            }
            TransportErrorPayload::Unreachable => DeliveryProblem::Unreachable,
            _ => DeliveryProblem::Other,
        }
    }
}

/// One error the kernel reported for a datagram the socket sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryError {
    pub problem: DeliveryProblem,
    /// The host or router that sent the ICMP message, when the kernel knows.
    pub reporter: Option<IpAddr>,
    /// The kernel's error number for it (ECONNREFUSED, EHOSTUNREACH, ...).
    pub errno: i32,
}

impl From<TransportError> for DeliveryError {
    fn from(e: TransportError) -> DeliveryError {
        DeliveryError {
            problem: DeliveryProblem::of(e.payload, e.raw_errno),
            reporter: e.addr.map(|a| a.ip()),
            errno: e.raw_errno,
        }
    }
}

impl fmt::Display for DeliveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problem {
            DeliveryProblem::PortUnreachable => write!(f, "ICMP port unreachable")?,
            DeliveryProblem::Unreachable => write!(
                f,
                "ICMP unreachable ({})",
                io::Error::from_raw_os_error(self.errno)
            )?,
            DeliveryProblem::Other => write!(f, "{}", io::Error::from_raw_os_error(self.errno))?,
        }
        match self.reporter {
            Some(ip) => write!(f, " from {ip}"),
            None => Ok(()),
        }
    }
}

/// The delivery errors a socket collected since it was last asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryErrors {
    pub count: u64,
    pub last: DeliveryError,
    /// The last that said nothing listens on the port, if any did.
    pub port_unreachable: Option<DeliveryError>,
}

impl DeliveryErrors {
    /// `collected` with `e` counted in.
    pub(crate) fn add(collected: Option<DeliveryErrors>, e: DeliveryError) -> DeliveryErrors {
        let refused = (e.problem == DeliveryProblem::PortUnreachable).then_some(e);
        DeliveryErrors {
            count: collected.map_or(0, |c| c.count).saturating_add(1),
            last: e,
            port_unreachable: refused.or(collected.and_then(|c| c.port_unreachable)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(problem: DeliveryProblem, errno: i32) -> DeliveryError {
        DeliveryError {
            problem,
            reporter: Some(IpAddr::from([192, 0, 2, 1])),
            errno,
        }
    }

    #[test]
    fn counts_every_error_and_keeps_the_last_and_the_last_port_unreachable() {
        let refused = error(DeliveryProblem::PortUnreachable, libc::ECONNREFUSED);
        let no_route = error(DeliveryProblem::Unreachable, libc::EHOSTUNREACH);
        let one = DeliveryErrors::add(None, no_route);
        assert_eq!(
            (one.count, one.last, one.port_unreachable),
            (1, no_route, None)
        );
        let two = DeliveryErrors::add(Some(one), refused);
        assert_eq!(
            (two.count, two.last, two.port_unreachable),
            (2, refused, Some(refused))
        );
        let three = DeliveryErrors::add(Some(two), no_route);
        assert_eq!(
            (three.count, three.last, three.port_unreachable),
            (3, no_route, Some(refused))
        );
    }

    #[test]
    fn only_an_unreachable_with_connection_refused_is_a_closed_port() {
        use TransportErrorPayload::{TooBig, Unreachable};
        let cases = [
            (
                Unreachable,
                libc::ECONNREFUSED,
                DeliveryProblem::PortUnreachable,
            ),
            (
                Unreachable,
                libc::EHOSTUNREACH,
                DeliveryProblem::Unreachable,
            ),
            (Unreachable, libc::ENETUNREACH, DeliveryProblem::Unreachable),
            (TooBig { mtu: 1280 }, libc::EMSGSIZE, DeliveryProblem::Other),
            (
                TransportErrorPayload::Other,
                libc::ECONNREFUSED,
                DeliveryProblem::Other,
            ),
        ];
        for (payload, errno, problem) in cases {
            assert_eq!(
                DeliveryProblem::of(payload, errno),
                problem,
                "{payload:?} {errno}"
            );
        }
    }

    #[test]
    fn says_what_happened_and_who_said_so() {
        let refused = error(DeliveryProblem::PortUnreachable, libc::ECONNREFUSED);
        assert_eq!(refused.to_string(), "ICMP port unreachable from 192.0.2.1");
        let no_route = DeliveryError {
            reporter: None,
            ..error(DeliveryProblem::Unreachable, libc::EHOSTUNREACH)
        };
        assert!(no_route
            .to_string()
            .starts_with("ICMP unreachable (No route to host"));
    }
}
