//! The client's `[routing]`: traffic routed into the tunnel, the paths' own
//! packets to the server excepted (see `plan` for the routes and rules).
//!
//! The path sockets carry a mark (`SO_MARK`, the table's number) that the
//! rules skip. Installed at start after the TUN device exists, removed on
//! exit by dropping [`Installed`] (a normal stop, an error on the way up or
//! later, a panic); leftovers of a run that was killed are removed at the
//! next start. Routes out of the TUN device go with the device anyway; the
//! rules would stay.

mod netlink;
pub mod plan;

use std::io;
use std::path::Path;

use braid_lab::rtnl::Rtnl;
use tracing::{info, warn};

use crate::config::client::ClientConfig;
use crate::Failure;
pub use plan::Plan;
use plan::{Family, Rule, RuleAction, TunnelFamilies, TunnelRoute, PRIORITIES};

/// At most this many leftover rules per priority and family are removed:
/// one per run killed since braid last stopped cleanly, so a few at most.
const MAX_STALE_RULES: usize = 64;

/// What the kernel does with the plan's routes and rules (rtnetlink; a
/// recording fake in the tests).
pub trait Kernel {
    fn add_route(&mut self, route: &TunnelRoute, oif: u32) -> io::Result<()>;
    fn delete_route(&mut self, route: &TunnelRoute, oif: u32) -> io::Result<()>;
    fn add_rule(&mut self, rule: &Rule) -> io::Result<()>;
    fn delete_rule(&mut self, rule: &Rule) -> io::Result<()>;
    /// Deletes one rule of `family` at `priority`, whatever it says;
    /// `ENOENT` when there is none.
    fn delete_rule_at(&mut self, family: Family, priority: u32) -> io::Result<()>;
}

/// The plan for a client's config, or `None` without `[routing]`; checked
/// before anything is created, so that a bad one is a usage error.
pub fn plan_for(file: &Path, config: &ClientConfig) -> Result<Option<Plan>, Failure> {
    let routing = &config.routing;
    let tunnel = TunnelFamilies {
        v4: config.tunnel.get_ref().ipv4.is_some(),
        v6: config.tunnel.get_ref().ipv6.is_some(),
    };
    Plan::new(
        routing.route_all(),
        &routing.prefixes,
        routing.table,
        tunnel,
    )
    .map_err(|e| Failure::Usage(format!("{}: [routing]: {e}", file.display())))
}

/// Installs the plan's routes out of TUN device `tun` and its rules; on an
/// error, everything installed so far is removed again.
pub fn install(plan: &Plan, tun: &str) -> Result<Installed<Rtnl>, Failure> {
    let oif = interface_index(tun)
        .map_err(|e| Failure::Runtime(format!("routing: TUN device {tun:?}: {e}")))?;
    let rtnl = Rtnl::open()
        .map_err(|e| Failure::Runtime(format!("routing: cannot open rtnetlink: {e}")))?;
    if plan
        .rules
        .iter()
        .any(|r| r.family == Family::V4 && r.action == RuleAction::MainWithoutDefault)
    {
        warn_about_strict_reverse_path_filter(tun);
    }
    install_with(rtnl, plan, tun, oif).map_err(Failure::Runtime)
}

/// What [`install`] put in place; removed, last first, when dropped.
pub struct Installed<K: Kernel> {
    kernel: K,
    oif: u32,
    routes: Vec<TunnelRoute>,
    rules: Vec<Rule>,
}

fn install_with<K: Kernel>(
    kernel: K,
    plan: &Plan,
    tun: &str,
    oif: u32,
) -> Result<Installed<K>, String> {
    let mut installed = Installed {
        kernel,
        oif,
        routes: Vec::new(),
        rules: Vec::new(),
    };
    installed.remove_stale_rules()?;
    // Routes before the rules that lead to them: the table is complete
    // when the first packet is sent to it.
    for route in &plan.routes {
        installed
            .kernel
            .add_route(route, oif)
            .map_err(|e| format!("routing: cannot add {route} dev {tun}: {e}"))?;
        installed.routes.push(*route);
        info!("routing: added {route} dev {tun}");
    }
    for rule in &plan.rules {
        installed
            .kernel
            .add_rule(rule)
            .map_err(|e| format!("routing: cannot add {rule}: {e}"))?;
        installed.rules.push(*rule);
        info!("routing: added {rule}");
    }
    Ok(installed)
}

impl<K: Kernel> Installed<K> {
    /// Rules at braid's priorities are left by a run that could not remove
    /// them (killed, or the machine lost power before it could).
    fn remove_stale_rules(&mut self) -> Result<(), String> {
        for family in Family::BOTH {
            for priority in PRIORITIES {
                for _ in 0..MAX_STALE_RULES {
                    match self.kernel.delete_rule_at(family, priority) {
                        Ok(()) => warn!(
                            "routing: removed a leftover {family} rule at priority {priority} \
                             (a previous run did not stop cleanly)"
                        ),
                        Err(e) if is_absent(&e) => break,
                        Err(e) => {
                            return Err(format!(
                                "routing: cannot remove leftover {family} rules at priority \
                                 {priority}: {e}"
                            ))
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl<K: Kernel> Drop for Installed<K> {
    fn drop(&mut self) {
        while let Some(rule) = self.rules.pop() {
            match self.kernel.delete_rule(&rule) {
                Ok(()) => info!("routing: removed {rule}"),
                Err(e) => warn!("routing: cannot remove {rule}: {e}"),
            }
        }
        while let Some(route) = self.routes.pop() {
            match self.kernel.delete_route(&route, self.oif) {
                Ok(()) => info!("routing: removed {route}"),
                // The kernel removes a device's routes with the device.
                Err(e) if is_absent(&e) => info!("routing: removed {route} (with the TUN device)"),
                Err(e) => warn!("routing: cannot remove {route}: {e}"),
            }
        }
    }
}

/// "Not there": no such rule or route, or no such device any more, or no
/// IPv6 in this kernel at all.
fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::ESRCH | libc::ENODEV | libc::EAFNOSUPPORT)
    )
}

fn interface_index(name: &str) -> io::Result<u32> {
    let c_name = std::ffi::CString::new(name).map_err(io::Error::other)?;
    // SAFETY: c_name is a valid NUL-terminated string.
    match unsafe { libc::if_nametoindex(c_name.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        index => Ok(index),
    }
}

/// With route_all, the reverse-path check of a packet from the server sees
/// braid's default route through the tunnel, not the link it came in on:
/// strict filtering (`rp_filter = 1`) drops the server's answers. Loose (2)
/// or none (0) are fine. Said once at start, since braid does not change
/// the host's sysctls.
fn warn_about_strict_reverse_path_filter(tun: &str) {
    let conf = Path::new("/proc/sys/net/ipv4/conf");
    let read = |iface: &str| -> u8 {
        std::fs::read_to_string(conf.join(iface).join("rp_filter"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    };
    let all = read("all");
    let Ok(entries) = std::fs::read_dir(conf) else {
        return;
    };
    let mut strict: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| !["all", "default", "lo", tun].contains(&name.as_str()))
        // The kernel uses the larger of the two values.
        .filter(|name| all.max(read(name)) == 1)
        .collect();
    if !strict.is_empty() {
        strict.sort();
        warn!(
            "routing: strict reverse-path filtering (rp_filter = 1) on {} drops the server's \
             answers with route_all: set net.ipv4.conf.all.rp_filter and theirs to 2 (loose)",
            strict.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records every call; fails the `fail_at`-th add (0-based) with EEXIST;
    /// holds `stale` leftover rules per (family, priority).
    #[derive(Default)]
    struct FakeKernel {
        log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
        adds: usize,
        fail_at: Option<usize>,
        stale: Vec<(Family, u32)>,
    }

    impl FakeKernel {
        fn add(&mut self, what: String) -> io::Result<()> {
            let n = self.adds;
            self.adds += 1;
            if self.fail_at == Some(n) {
                return Err(io::Error::from_raw_os_error(libc::EEXIST));
            }
            self.log.borrow_mut().push(what);
            Ok(())
        }
    }

    impl Kernel for FakeKernel {
        fn add_route(&mut self, route: &TunnelRoute, oif: u32) -> io::Result<()> {
            self.add(format!("add {route} oif {oif}"))
        }
        fn delete_route(&mut self, route: &TunnelRoute, oif: u32) -> io::Result<()> {
            self.log
                .borrow_mut()
                .push(format!("delete {route} oif {oif}"));
            Ok(())
        }
        fn add_rule(&mut self, rule: &Rule) -> io::Result<()> {
            self.add(format!("add {rule}"))
        }
        fn delete_rule(&mut self, rule: &Rule) -> io::Result<()> {
            self.log.borrow_mut().push(format!("delete {rule}"));
            Ok(())
        }
        fn delete_rule_at(&mut self, family: Family, priority: u32) -> io::Result<()> {
            match self.stale.iter().position(|s| *s == (family, priority)) {
                Some(i) => {
                    self.stale.remove(i);
                    self.log
                        .borrow_mut()
                        .push(format!("delete stale {family} {priority}"));
                    Ok(())
                }
                None => Err(io::Error::from_raw_os_error(libc::ENOENT)),
            }
        }
    }

    fn route_all_v4() -> Plan {
        let v4 = TunnelFamilies {
            v4: true,
            v6: false,
        };
        Plan::new(true, &[], 51820, v4).unwrap().unwrap()
    }

    const ADDED: [&str; 3] = [
        "add route 0.0.0.0/0 table 51820 oif 7",
        "add IPv4 rule 31820: lookup main suppress_prefixlength 0",
        "add IPv4 rule 31821: not fwmark 0xca6c lookup 51820",
    ];
    const REMOVED: [&str; 3] = [
        "delete IPv4 rule 31821: not fwmark 0xca6c lookup 51820",
        "delete IPv4 rule 31820: lookup main suppress_prefixlength 0",
        "delete route 0.0.0.0/0 table 51820 oif 7",
    ];

    #[test]
    fn installs_routes_then_rules_and_removes_them_last_first() {
        let kernel = FakeKernel::default();
        let log = kernel.log.clone();
        let installed = install_with(kernel, &route_all_v4(), "braid0", 7).unwrap();
        assert_eq!(*log.borrow(), ADDED);
        drop(installed);
        let all: Vec<String> = ADDED
            .iter()
            .chain(&REMOVED)
            .map(|s| s.to_string())
            .collect();
        assert_eq!(*log.borrow(), all);
    }

    #[test]
    fn a_failed_step_removes_exactly_what_was_installed_before_it() {
        let kernel = FakeKernel {
            fail_at: Some(2),
            ..FakeKernel::default()
        };
        let log = kernel.log.clone();
        let err = install_with(kernel, &route_all_v4(), "braid0", 7)
            .err()
            .unwrap();
        assert!(
            err.starts_with("routing: cannot add IPv4 rule 31821: not fwmark 0xca6c lookup 51820"),
            "{err}"
        );
        assert_eq!(*log.borrow(), [ADDED[0], ADDED[1], REMOVED[1], REMOVED[2]]);
    }

    #[test]
    fn leftover_rules_of_every_family_and_priority_go_first() {
        let kernel = FakeKernel {
            stale: vec![
                (Family::V4, 31821),
                (Family::V4, 31821),
                (Family::V6, 31820),
            ],
            ..FakeKernel::default()
        };
        let log = kernel.log.clone();
        let installed = install_with(kernel, &route_all_v4(), "braid0", 7).unwrap();
        assert_eq!(
            log.borrow()[..4],
            [
                "delete stale IPv4 31821",
                "delete stale IPv4 31821",
                "delete stale IPv6 31820",
                ADDED[0],
            ]
        );
        assert!(installed.kernel.stale.is_empty());
    }
}
