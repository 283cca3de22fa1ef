//! What `[routing]` asks of the kernel, computed from the config alone: the
//! routes into the TUN device (all in braid's own table) and the policy
//! rules that send traffic to that table, every packet the path sockets
//! send (marked with `SO_MARK`) excepted.
//!
//! `route_all`: the table holds a default route per tunnel family; rule one
//! looks up the main table ignoring its default routes (so that the host's
//! more specific routes — its LAN, its links — still win), rule two sends
//! every unmarked packet to braid's table. `prefixes`: the table holds the
//! listed prefixes and only rule two is needed: a listed prefix goes into
//! the tunnel even where the main table has a more specific route, as the
//! user asked, while the paths' own packets never do.

use std::fmt;

use ipnet::IpNet;

/// Rule one (route_all): the main table, its default routes ignored.
/// Below the main table's 32766 and away from the priorities the kernel
/// gives rules added without one (32765 and down, as wg-quick's are).
pub const MAIN_WITHOUT_DEFAULT_PRIORITY: u32 = 31820;
/// Rule two: braid's table for every packet not marked as a path's.
pub const TUNNEL_TABLE_PRIORITY: u32 = 31821;
// The main table without its default routes is looked up first, so that
// the host's more specific routes win over braid's default route.
const _: () = assert!(MAIN_WITHOUT_DEFAULT_PRIORITY < TUNNEL_TABLE_PRIORITY);
/// Every priority braid adds rules at; rules found there at start are
/// leftovers of a run that could not clean up.
pub const PRIORITIES: [u32; 2] = [MAIN_WITHOUT_DEFAULT_PRIORITY, TUNNEL_TABLE_PRIORITY];

/// Table ids the kernel reserves: unspecified, default, main, local.
const RESERVED_TABLES: [u32; 4] = [0, 253, 254, 255];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub const BOTH: [Family; 2] = [Family::V4, Family::V6];

    fn of(net: &IpNet) -> Family {
        match net {
            IpNet::V4(_) => Family::V4,
            IpNet::V6(_) => Family::V6,
        }
    }

    fn default_route(self) -> IpNet {
        match self {
            Family::V4 => IpNet::V4(Default::default()),
            Family::V6 => IpNet::V6(Default::default()),
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// Which address families the tunnel has an address in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelFamilies {
    pub v4: bool,
    pub v6: bool,
}

impl TunnelFamilies {
    fn has(self, family: Family) -> bool {
        match family {
            Family::V4 => self.v4,
            Family::V6 => self.v6,
        }
    }
}

/// A route to `prefix` out of the TUN device, in `table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelRoute {
    pub prefix: IpNet,
    pub table: u32,
}

impl TunnelRoute {
    pub fn family(&self) -> Family {
        Family::of(&self.prefix)
    }
}

impl fmt::Display for TunnelRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "route {} table {}", self.prefix, self.table)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleAction {
    /// Look up the main table, ignoring routes of prefix length 0.
    MainWithoutDefault,
    /// Look up `table` unless the packet carries `mark`.
    TableUnlessMarked { table: u32, mark: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub family: Family,
    pub priority: u32,
    pub action: RuleAction,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} rule {}: ", self.family, self.priority)?;
        match self.action {
            RuleAction::MainWithoutDefault => f.write_str("lookup main suppress_prefixlength 0"),
            RuleAction::TableUnlessMarked { table, mark } => {
                write!(f, "not fwmark {mark:#x} lookup {table}")
            }
        }
    }
}

/// Everything `[routing]` installs, in installation order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub routes: Vec<TunnelRoute>,
    pub rules: Vec<Rule>,
    /// The mark the path sockets carry (`SO_MARK`): the table's number.
    pub mark: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("table = {0} is one the kernel reserves (0, 253 default, 254 main, 255 local): pick another, such as 51820")]
    ReservedTable(u32),
    #[error("prefix {prefix} is {family} but [tunnel] has no {family} address: add one, or leave the prefix out")]
    NoTunnelAddress { prefix: IpNet, family: Family },
}

impl Plan {
    /// The plan for `route_all` or `prefixes` (the config refuses both at
    /// once) in `table`; `None` when neither asks for anything.
    pub fn new(
        route_all: bool,
        prefixes: &[IpNet],
        table: u32,
        tunnel: TunnelFamilies,
    ) -> Result<Option<Plan>, PlanError> {
        if !route_all && prefixes.is_empty() {
            return Ok(None);
        }
        if RESERVED_TABLES.contains(&table) {
            return Err(PlanError::ReservedTable(table));
        }
        let mut routes: Vec<TunnelRoute> = Vec::new();
        if route_all {
            for family in Family::BOTH.into_iter().filter(|f| tunnel.has(*f)) {
                routes.push(TunnelRoute {
                    prefix: family.default_route(),
                    table,
                });
            }
        }
        for prefix in prefixes {
            let family = Family::of(prefix);
            if !tunnel.has(family) {
                return Err(PlanError::NoTunnelAddress {
                    prefix: *prefix,
                    family,
                });
            }
            // The kernel refuses host bits; `192.168.50.1/24` means the /24.
            let route = TunnelRoute {
                prefix: prefix.trunc(),
                table,
            };
            if !routes.contains(&route) {
                routes.push(route);
            }
        }
        let mark = table;
        let mut rules = Vec::new();
        for family in Family::BOTH {
            if !routes.iter().any(|r| r.family() == family) {
                continue;
            }
            if route_all {
                rules.push(Rule {
                    family,
                    priority: MAIN_WITHOUT_DEFAULT_PRIORITY,
                    action: RuleAction::MainWithoutDefault,
                });
            }
            rules.push(Rule {
                family,
                priority: TUNNEL_TABLE_PRIORITY,
                action: RuleAction::TableUnlessMarked { table, mark },
            });
        }
        Ok(Some(Plan {
            routes,
            rules,
            mark,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: TunnelFamilies = TunnelFamilies { v4: true, v6: true };
    const V4_ONLY: TunnelFamilies = TunnelFamilies {
        v4: true,
        v6: false,
    };

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    fn route(prefix: &str) -> TunnelRoute {
        TunnelRoute {
            prefix: net(prefix),
            table: 51820,
        }
    }

    fn unless_marked(family: Family) -> Rule {
        Rule {
            family,
            priority: TUNNEL_TABLE_PRIORITY,
            action: RuleAction::TableUnlessMarked {
                table: 51820,
                mark: 51820,
            },
        }
    }

    fn main_without_default(family: Family) -> Rule {
        Rule {
            family,
            priority: MAIN_WITHOUT_DEFAULT_PRIORITY,
            action: RuleAction::MainWithoutDefault,
        }
    }

    #[test]
    fn nothing_configured_installs_nothing() {
        assert_eq!(Plan::new(false, &[], 51820, BOTH), Ok(None));
    }

    #[test]
    fn route_all_covers_each_tunnel_family_with_both_rules() {
        let plan = Plan::new(true, &[], 51820, BOTH).unwrap().unwrap();
        assert_eq!(plan.routes, [route("0.0.0.0/0"), route("::/0")]);
        assert_eq!(
            plan.rules,
            [
                main_without_default(Family::V4),
                unless_marked(Family::V4),
                main_without_default(Family::V6),
                unless_marked(Family::V6),
            ]
        );
        assert_eq!(plan.mark, 51820);
    }

    #[test]
    fn route_all_leaves_a_family_without_tunnel_address_alone() {
        let plan = Plan::new(true, &[], 51820, V4_ONLY).unwrap().unwrap();
        assert_eq!(plan.routes, [route("0.0.0.0/0")]);
        assert!(plan.rules.iter().all(|r| r.family == Family::V4));
        assert_eq!(plan.rules.len(), 2);
    }

    #[test]
    fn prefixes_get_routes_and_only_the_mark_rule_of_their_families() {
        let prefixes = [
            net("192.168.50.7/24"),
            net("192.168.50.0/24"),
            net("10.1.0.0/16"),
        ];
        let plan = Plan::new(false, &prefixes, 100, BOTH).unwrap().unwrap();
        let in_100 = |p: &str| TunnelRoute {
            prefix: net(p),
            table: 100,
        };
        // Host bits cleared, the duplicate this makes dropped.
        assert_eq!(
            plan.routes,
            [in_100("192.168.50.0/24"), in_100("10.1.0.0/16")]
        );
        assert_eq!(
            plan.rules,
            [Rule {
                family: Family::V4,
                priority: TUNNEL_TABLE_PRIORITY,
                action: RuleAction::TableUnlessMarked {
                    table: 100,
                    mark: 100
                },
            }]
        );
        assert_eq!(plan.mark, 100);
    }

    #[test]
    fn a_prefix_of_a_family_the_tunnel_lacks_is_refused() {
        let err = Plan::new(false, &[net("2001:db8::/32")], 51820, V4_ONLY).unwrap_err();
        assert_eq!(
            err,
            PlanError::NoTunnelAddress {
                prefix: net("2001:db8::/32"),
                family: Family::V6
            }
        );
        assert!(err.to_string().contains("no IPv6 address"), "{err}");
    }

    #[test]
    fn reserved_tables_are_refused() {
        for table in [0, 253, 254, 255] {
            assert_eq!(
                Plan::new(true, &[], table, BOTH),
                Err(PlanError::ReservedTable(table))
            );
        }
        assert!(Plan::new(true, &[], 256, BOTH).unwrap().is_some());
    }

    #[test]
    fn rules_print_as_ip_rule_shows_them() {
        assert_eq!(
            unless_marked(Family::V4).to_string(),
            "IPv4 rule 31821: not fwmark 0xca6c lookup 51820"
        );
        assert_eq!(
            main_without_default(Family::V6).to_string(),
            "IPv6 rule 31820: lookup main suppress_prefixlength 0"
        );
        assert_eq!(route("::/0").to_string(), "route ::/0 table 51820");
    }
}
