//! `key=value,...` parameters of a scheduler spec; every key must be used.

use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    #[error("parameter {0:?} is not key=value")]
    Syntax(String),
    #[error("parameter {key}: bad value {value:?} ({expected})")]
    Value {
        key: String,
        value: String,
        expected: &'static str,
    },
    #[error("unknown parameter(s): {0}")]
    Unknown(String),
    #[error("parameter {0} given twice")]
    Duplicate(String),
}

#[derive(Debug, Default)]
pub struct Params(BTreeMap<String, String>);

impl Params {
    pub fn parse(s: &str) -> Result<Params, ParamError> {
        let mut map = BTreeMap::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| ParamError::Syntax(item.to_owned()))?;
            if map
                .insert(k.trim().to_owned(), v.trim().to_owned())
                .is_some()
            {
                return Err(ParamError::Duplicate(k.trim().to_owned()));
            }
        }
        Ok(Params(map))
    }

    pub fn take(&mut self, key: &str) -> Option<String> {
        self.0.remove(key)
    }

    fn bad(key: &str, value: String, expected: &'static str) -> ParamError {
        ParamError::Value {
            key: key.to_owned(),
            value,
            expected,
        }
    }

    pub fn f64(&mut self, key: &str) -> Result<Option<f64>, ParamError> {
        self.take(key)
            .map(|v| match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
                _ => Err(Self::bad(key, v, "a non-negative number")),
            })
            .transpose()
    }

    /// Durations as `250ms`, `1s` or `500us`.
    pub fn duration(&mut self, key: &str) -> Result<Option<Duration>, ParamError> {
        self.take(key)
            .map(|v| {
                let parsed = if let Some(n) = v.strip_suffix("ms") {
                    n.parse::<f64>().ok().map(|x| x / 1e3)
                } else if let Some(n) = v.strip_suffix("us") {
                    n.parse::<f64>().ok().map(|x| x / 1e6)
                } else if let Some(n) = v.strip_suffix('s') {
                    n.parse::<f64>().ok()
                } else {
                    None
                };
                match parsed {
                    Some(x) if x.is_finite() && x > 0.0 && x < 1e6 => {
                        Ok(Duration::from_secs_f64(x))
                    }
                    _ => Err(Self::bad(key, v, "a duration such as 250ms")),
                }
            })
            .transpose()
    }

    /// A `/`-separated list of non-negative numbers.
    pub fn list(&mut self, key: &str) -> Result<Option<Vec<f64>>, ParamError> {
        self.take(key)
            .map(|v| {
                v.split('/')
                    .map(|x| x.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| Self::bad(key, v.clone(), "numbers separated by '/'"))
            })
            .transpose()
    }

    /// Errors if a key was given that no one read.
    pub fn finish(self) -> Result<(), ParamError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ParamError::Unknown(
                self.0.keys().cloned().collect::<Vec<_>>().join(", "),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(key: &str, value: &str) -> Params {
        Params::parse(&format!("{key}={value}")).unwrap()
    }

    #[test]
    fn values_are_checked_at_their_bounds() {
        let dur = |v: &str| one("d", v).duration("d");
        assert_eq!(dur("250ms").unwrap(), Some(Duration::from_millis(250)));
        assert_eq!(dur("500us").unwrap(), Some(Duration::from_micros(500)));
        assert_eq!(dur("2s").unwrap(), Some(Duration::from_secs(2)));
        assert_eq!(dur("999999s").unwrap(), Some(Duration::from_secs(999_999)));
        for bad in ["0ms", "-1ms", "1000000s", "infs", "NaNms", "5", "ms"] {
            assert!(dur(bad).is_err(), "{bad}");
        }
        let num = |v: &str| one("x", v).f64("x");
        assert_eq!(num("0").unwrap(), Some(0.0));
        assert_eq!(num("2.5").unwrap(), Some(2.5));
        for bad in ["-1", "inf", "NaN", "x"] {
            assert!(num(bad).is_err(), "{bad}");
        }
        let list = |v: &str| one("w", v).list("w");
        assert_eq!(list("1/0/2.5").unwrap(), Some(vec![1.0, 0.0, 2.5]));
        for bad in ["1/-2", "1/inf", "1//2"] {
            assert!(list(bad).is_err(), "{bad}");
        }
        assert_eq!(one("a", "1").f64("b").unwrap(), None);
    }
}
