//! nftables for braid: tables of braid's own, written and removed through
//! the `nft` program's JSON interface (`nft -j -f -`, Debian package
//! `nftables`).
//!
//! JSON, not nft's command language: every name (a table, an interface
//! from a config file) is a JSON string, so no name can ever be read as a
//! keyword or end a rule early. One `nft -f` run is one transaction: a
//! ruleset is applied whole or not at all.
//!
//! The caller's network namespace is the one changed; run it on a thread
//! inside another namespace to change that one (the child `nft` inherits
//! the thread's namespace).

use std::io::{self, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// The program run; found through `PATH`.
pub const NFT: &str = "nft";

#[derive(Debug, thiserror::Error)]
pub enum NftError {
    #[error("the `nft` program is not installed (Debian/Ubuntu: apt-get install nftables)")]
    NotInstalled,
    #[error("running nft: {0}")]
    Io(#[from] io::Error),
    #[error("nft refused the ruleset: {0}")]
    Refused(String),
}

/// A table of braid's own: `family` is `ip`, `ip6` or `inet`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub family: &'static str,
    pub name: String,
}

/// One masquerading NAT rule: packets leaving through `oifname` (and, when
/// given, having come in through `iifname`) get the outgoing interface's
/// address as their source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masquerade {
    pub iifname: Option<String>,
    pub oifname: String,
    /// A random port for every new mapping (`fully-random`), as
    /// carrier-grade NATs do: a mapping the NAT forgets comes back on
    /// another port. Otherwise the NAT keeps the source port when it can.
    pub fully_random_ports: bool,
}

/// The chain every table of this crate's making holds its NAT rules in.
pub const POSTROUTING: &str = "postrouting";
/// nft's `srcnat` priority, where source NAT belongs.
const SRCNAT_PRIORITY: i32 = 100;

impl Table {
    fn id(&self) -> Value {
        json!({"family": self.family, "name": self.name})
    }

    /// The commands that create this table holding one NAT chain with
    /// `rules`, replacing a table of the same name left from before (a
    /// crashed run): adding an existing table is no error, so add, delete,
    /// add makes sure the result holds nothing older.
    pub fn replace_with_masquerade(&self, rules: &[Masquerade]) -> Value {
        let mut commands = vec![
            json!({"add": {"table": self.id()}}),
            json!({"delete": {"table": self.id()}}),
            json!({"add": {"table": self.id()}}),
            json!({"add": {"chain": {
                "family": self.family,
                "table": self.name,
                "name": POSTROUTING,
                "type": "nat",
                "hook": "postrouting",
                "prio": SRCNAT_PRIORITY,
                "policy": "accept",
            }}}),
        ];
        for rule in rules {
            let mut expr = Vec::new();
            if let Some(iif) = &rule.iifname {
                expr.push(meta_is("iifname", iif));
            }
            expr.push(meta_is("oifname", &rule.oifname));
            expr.push(if rule.fully_random_ports {
                json!({"masquerade": {"flags": "fully-random"}})
            } else {
                json!({"masquerade": null})
            });
            commands.push(json!({"add": {"rule": {
                "family": self.family,
                "table": self.name,
                "chain": POSTROUTING,
                "expr": expr,
            }}}));
        }
        json!({"nftables": commands})
    }

    /// The command that removes this table and everything in it.
    pub fn delete(&self) -> Value {
        json!({"nftables": [{"delete": {"table": self.id()}}]})
    }
}

fn meta_is(key: &str, value: &str) -> Value {
    json!({"match": {"op": "==", "left": {"meta": {"key": key}}, "right": value}})
}

/// Runs `nft -j -f -` on `ruleset`: all of it is applied, or nothing.
pub fn apply(ruleset: &Value) -> Result<(), NftError> {
    let mut child = Command::new(NFT)
        .args(["-j", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => NftError::NotInstalled,
            _ => NftError::Io(e),
        })?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let written = stdin.write_all(ruleset.to_string().as_bytes());
    drop(stdin);
    let out = child.wait_with_output()?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        // nft's first line says what; the rest repeats the input.
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(NftError::Refused(format!(
            "{} ({})",
            first.trim(),
            out.status
        )));
    }
    written.map_err(NftError::Io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            family: "inet",
            name: "braid_nat_t\"0".to_owned(),
        }
    }

    #[test]
    fn a_stale_table_is_replaced_in_the_same_transaction() {
        let ruleset = table().replace_with_masquerade(&[Masquerade {
            iifname: Some("braid0".into()),
            oifname: "eth0".into(),
            fully_random_ports: false,
        }]);
        let commands = ruleset["nftables"].as_array().unwrap();
        let verbs: Vec<&str> = commands
            .iter()
            .map(|c| c.as_object().unwrap().keys().next().unwrap().as_str())
            .collect();
        assert_eq!(verbs, ["add", "delete", "add", "add", "add"]);
        let rule = &commands[4]["add"]["rule"];
        assert_eq!(rule["table"], "braid_nat_t\"0");
        assert_eq!(rule["expr"][0]["match"]["right"], "braid0");
        assert_eq!(rule["expr"][1]["match"]["left"]["meta"]["key"], "oifname");
        assert_eq!(rule["expr"][1]["match"]["right"], "eth0");
        assert!(rule["expr"][2]["masquerade"].is_null());
    }

    #[test]
    fn a_rule_without_an_input_interface_matches_the_output_only_and_may_randomize_ports() {
        let ruleset = table().replace_with_masquerade(&[Masquerade {
            iifname: None,
            oifname: "w1".into(),
            fully_random_ports: true,
        }]);
        let expr = &ruleset["nftables"][4]["add"]["rule"]["expr"];
        assert_eq!(expr.as_array().unwrap().len(), 2);
        assert_eq!(expr[0]["match"]["right"], "w1");
        assert_eq!(expr[1]["masquerade"]["flags"], "fully-random");
    }
}
