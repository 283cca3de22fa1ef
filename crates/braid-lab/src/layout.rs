//! Names and addresses of a lab, derived from its name and path order alone,
//! so that `down` can find everything even when the state files are gone.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use crate::LabError;

/// Where the state of every lab lives (tmpfs: gone after a reboot, as the
/// namespaces are).
pub const STATE_ROOT: &str = "/run/braid-lab";
/// Where `ip netns` keeps its namespaces.
pub const NETNS_ROOT: &str = "/run/netns";
/// The server's address, on its loopback, reachable over every path.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 19, 0, 1);
/// Each path gets a /24 out of 198.18.0.0/16, so at most 250 paths; far more
/// than any test needs, so keep the limit low enough to stay readable.
pub const MAX_PATHS: usize = 32;
/// Policy routing tables for "from the address of path i" start here.
const TABLE_BASE: u32 = 100;
/// With `up --nat`, path i's NAT reaches the server over
/// `198.18.<NAT_SUBNET_BASE + i>.0/24`, above every path's own /24.
const NAT_SUBNET_BASE: u8 = 128;
/// The nftables table (family `ip`) of the NATs in the emulator namespace.
pub const NAT_TABLE: &str = "braid_lab_nat";
/// Path names that cannot name an interface in a namespace: `lo` is there
/// already, and the kernel refuses `all` and `default` (they would clash
/// with `net.ipv4.conf.all` and `.default`).
const RESERVED_IFACE_NAMES: [&str; 3] = ["lo", "all", "default"];
/// Appended to a reserved path name to make its interface's name; a path
/// name cannot contain '.', so no other path's interface can have it.
const RESERVED_IFACE_SUFFIX: &str = ".path";

#[derive(Debug, Clone)]
pub struct LabLayout {
    pub name: String,
}

impl LabLayout {
    pub fn new(name: &str) -> Result<LabLayout, LabError> {
        let ok = (1..=15).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return Err(LabError::BadName(name.to_owned()));
        }
        Ok(LabLayout {
            name: name.to_owned(),
        })
    }

    pub fn ns_client(&self) -> String {
        format!("braid-{}-client", self.name)
    }
    pub fn ns_server(&self) -> String {
        format!("braid-{}-server", self.name)
    }
    pub fn ns_emulator(&self) -> String {
        format!("braid-{}-emu", self.name)
    }
    pub fn namespaces(&self) -> [String; 3] {
        [self.ns_client(), self.ns_server(), self.ns_emulator()]
    }

    pub fn state_dir(&self) -> PathBuf {
        PathBuf::from(STATE_ROOT).join(&self.name)
    }
    /// Beside the state directory, not in it: it outlives the lab.
    pub fn lock_file(&self) -> PathBuf {
        PathBuf::from(STATE_ROOT).join(format!("{}.lock", self.name))
    }
    pub fn config_file(&self) -> PathBuf {
        self.state_dir().join("config.json")
    }
    pub fn pid_file(&self) -> PathBuf {
        self.state_dir().join("emulator.pid")
    }
    pub fn control_socket(&self) -> PathBuf {
        self.state_dir().join("control.sock")
    }
    pub fn log_file(&self) -> PathBuf {
        self.state_dir().join("emulator.log")
    }
}

/// The names and addresses of path number `index` (0-based) called `name`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathLayout {
    pub name: String,
    /// The path's interface in the client namespace (and in the server's):
    /// the path's name, or `NAME.path` for a name the kernel reserves.
    pub client_iface: String,
    pub client_addr: Ipv4Addr,
    /// The server's address on this path's link: the client's gateway.
    pub gateway: Ipv4Addr,
    /// The emulator's interfaces facing the client and the server.
    pub emu_client_iface: String,
    pub emu_server_iface: String,
    /// The routing table that sends traffic from `client_addr` over this path.
    pub table: u32,
    /// The path's masquerading NAT (`up --nat`), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat: Option<NatLayout>,
}

/// A path's NAT, in the emulator namespace between the path's emulated link
/// and the server: the client's gateway is the NAT, and the server sees
/// the NAT's address and ports, as a server on the internet sees a client
/// behind a home router or carrier-grade NAT.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NatLayout {
    /// The NAT's interface at the end of the emulated link; it holds the
    /// path's `gateway`.
    pub inner_iface: String,
    /// The NAT's interface facing the server, and its address there: the
    /// source address the server sees on this path.
    pub outer_iface: String,
    pub outer_addr: Ipv4Addr,
    /// The server's address on the link from the NAT.
    pub server_addr: Ipv4Addr,
}

impl PathLayout {
    pub fn new(index: usize, name: &str) -> PathLayout {
        let subnet = u8::try_from(index + 1).expect("index below MAX_PATHS");
        let client_iface = if RESERVED_IFACE_NAMES.contains(&name) {
            format!("{name}{RESERVED_IFACE_SUFFIX}")
        } else {
            name.to_owned()
        };
        PathLayout {
            name: name.to_owned(),
            client_iface,
            client_addr: Ipv4Addr::new(198, 18, subnet, 2),
            gateway: Ipv4Addr::new(198, 18, subnet, 1),
            emu_client_iface: format!("c{}", index + 1),
            emu_server_iface: format!("s{}", index + 1),
            table: TABLE_BASE + index as u32 + 1,
            nat: None,
        }
    }

    /// The same path behind a NAT of its own.
    pub fn behind_nat(self, index: usize) -> PathLayout {
        let subnet = NAT_SUBNET_BASE + u8::try_from(index + 1).expect("index below MAX_PATHS");
        PathLayout {
            nat: Some(NatLayout {
                inner_iface: format!("n{}", index + 1),
                outer_iface: format!("w{}", index + 1),
                outer_addr: Ipv4Addr::new(198, 18, subnet, 2),
                server_addr: Ipv4Addr::new(198, 18, subnet, 1),
            }),
            ..self
        }
    }

    /// Locally administered MACs, fixed so neighbours can be static.
    pub fn client_mac(&self) -> [u8; 6] {
        [0x02, 0x62, 0x72, self.client_addr.octets()[2], 0x00, 0x02]
    }
    pub fn server_mac(&self) -> [u8; 6] {
        [0x02, 0x62, 0x72, self.client_addr.octets()[2], 0x00, 0x01]
    }
    /// The server's MAC on the link from the path's NAT.
    pub fn nat_server_mac(&self) -> [u8; 6] {
        [0x02, 0x62, 0x72, self.client_addr.octets()[2], 0x01, 0x01]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_interface_limits() {
        let lab = LabLayout::new("fifteen-chars-x").unwrap();
        assert_eq!(lab.ns_client(), "braid-fifteen-chars-x-client");
        let p = PathLayout::new(MAX_PATHS - 1, "lte");
        assert!(p.emu_client_iface.len() <= 15);
        assert_eq!(p.client_addr, Ipv4Addr::new(198, 18, 32, 2));
        assert_ne!(p.client_mac(), p.server_mac());
        let nat = p.behind_nat(MAX_PATHS - 1).nat.unwrap();
        assert_eq!(nat.outer_addr, Ipv4Addr::new(198, 18, 160, 2));
        assert!(nat.inner_iface.len() <= 15 && nat.outer_iface.len() <= 15);
    }

    #[test]
    fn reserved_path_names_get_an_interface_name_no_path_can_have() {
        for name in RESERVED_IFACE_NAMES {
            let p = PathLayout::new(0, name);
            assert_eq!(p.client_iface, format!("{name}.path"));
            assert!(p.client_iface.len() <= 15);
        }
        assert_eq!(PathLayout::new(0, "dev").client_iface, "dev");
    }

    #[test]
    fn rejects_bad_lab_names() {
        for bad in ["", "a/b", "sixteen-chars-xx", "sp ace"] {
            assert!(LabLayout::new(bad).is_err(), "{bad:?}");
        }
    }
}
