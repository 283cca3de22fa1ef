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
            map.insert(k.trim().to_owned(), v.trim().to_owned());
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
