//! The `direct` path SPEC: one plain veth pair between the client and the
//! server, no emulator in between, offloads left on. It is the fastest link
//! the machine has, for measuring a data plane's own cost (a tunnel's
//! throughput next to raw veth); nothing about it can be `set`.

use braid_sim::spec::parse_path_name;

use crate::LabError;

/// The SPEC's first field.
pub const KEYWORD: &str = "direct";

/// What a `direct[,name=NAME]` SPEC says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectSpec {
    pub name: Option<String>,
}

impl DirectSpec {
    /// The path's name, or `p{index+1}` as for an emulated path.
    pub fn name_or_default(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("p{}", index + 1))
    }
}

/// `Ok(None)` for any SPEC that does not start with `direct` (an emulated
/// path's); an error for a `direct` SPEC with anything but one `name=`.
pub fn parse(spec: &str) -> Result<Option<DirectSpec>, LabError> {
    let mut fields = spec.split(',').map(str::trim);
    if fields.next() != Some(KEYWORD) {
        return Ok(None);
    }
    let bad = |why: String| LabError::DirectSpec {
        spec: spec.to_owned(),
        why,
    };
    let mut name = None;
    for field in fields {
        match field.split_once('=') {
            Some(("name", value)) if name.is_none() => {
                name = Some(parse_path_name(value).map_err(|e| bad(e.to_string()))?);
            }
            Some(("name", _)) => return Err(bad("name given twice".into())),
            _ => {
                return Err(bad(format!(
                    "{field:?}: a direct path takes only name=NAME (it has no emulator)"
                )))
            }
        }
    }
    Ok(Some(DirectSpec { name }))
}

/// Whether a SPEC already accepted by `up` is a direct path's.
pub fn is_direct(spec: &str) -> bool {
    matches!(parse(spec), Ok(Some(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_with_or_without_a_name() {
        assert_eq!(parse("direct").unwrap(), Some(DirectSpec { name: None }));
        let named = parse("direct, name=fast").unwrap().unwrap();
        assert_eq!(named.name_or_default(3), "fast");
        assert_eq!(parse("direct").unwrap().unwrap().name_or_default(1), "p2");
    }

    #[test]
    fn emulated_specs_are_not_direct() {
        for spec in [
            "10mbit,5ms",
            "trace=t,5ms",
            "directx",
            "",
            "10mbit,5ms,name=direct",
        ] {
            assert_eq!(parse(spec).unwrap(), None, "{spec:?}");
            assert!(!is_direct(spec));
        }
    }

    #[test]
    fn rejects_emulator_settings_and_bad_names() {
        for spec in [
            "direct,5ms",
            "direct,loss=1%",
            "direct,name=a,name=b",
            "direct,name=no spaces",
            "direct,name=",
        ] {
            let err = parse(spec).unwrap_err();
            assert!(matches!(err, LabError::DirectSpec { .. }), "{spec:?}");
            assert_eq!(err.exit_code(), 2, "{spec:?}");
        }
    }
}
