//! The JSON of Prometheus's query API, as typed series: an instant vector's series carry one
//! point (at the evaluation time), a range matrix's carry many. Pure.

use std::collections::BTreeMap;

use serde::Deserialize;

/// One series of an answer: its labels (`__name__` included) and its points, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub points: Vec<Point>,
}

impl Series {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name).map(String::as_str)
    }

    /// The metric's name.
    pub fn name(&self) -> &str {
        self.label("__name__").unwrap_or_default()
    }

    /// The newest point's value.
    pub fn value(&self) -> Option<f64> {
        self.points.last().map(|p| p.value)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub time: f64,
    pub value: f64,
}

/// A successful answer: its series and Prometheus's warnings (a partial answer says why).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    pub series: Vec<Series>,
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Raw {
    status: String,
    data: Option<Data>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: serde_json::Value,
}

#[derive(Deserialize)]
struct RawSeries {
    #[serde(default)]
    metric: BTreeMap<String, String>,
    value: Option<(f64, String)>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// An answer's body, or what is wrong with it: Prometheus's own error, or why the body is
/// not an answer (a proxy's login page, a Prometheus too old).
pub fn parse(body: &str) -> Result<Answer, String> {
    let raw: Raw = serde_json::from_str(body).map_err(|e| {
        let start: String = body.chars().take(80).collect();
        format!("not a Prometheus API answer ({e}): {start:?}")
    })?;
    if raw.status != "success" {
        return Err(format!(
            "Prometheus says {}: {}",
            raw.error_type.as_deref().unwrap_or("error"),
            raw.error.as_deref().unwrap_or("no reason given")
        ));
    }
    let data = raw.data.ok_or("a successful answer without data")?;
    let series = match data.result_type.as_str() {
        "vector" | "matrix" => {
            let raw: Vec<RawSeries> = serde_json::from_value(data.result)
                .map_err(|e| format!("a {} that does not parse: {e}", data.result_type))?;
            raw.into_iter()
                .map(|s| Series {
                    points: s
                        .value
                        .into_iter()
                        .chain(s.values)
                        .filter_map(|(time, v)| {
                            Some(Point {
                                time,
                                value: number(&v)?,
                            })
                        })
                        .collect(),
                    labels: s.metric,
                })
                .collect()
        }
        other => return Err(format!("a {other} answer where series were asked for")),
    };
    Ok(Answer {
        series,
        warnings: raw.warnings,
    })
}

/// A sample value as Prometheus writes it: `"0.25"`, `"NaN"`, `"+Inf"`.
fn number(text: &str) -> Option<f64> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_and_matrices_become_series_and_errors_say_what_prometheus_said() {
        let v = parse(
            r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"steptop_step","instance":"n1:9464"},"value":[1764115200.5,"120"]},
            {"metric":{"__name__":"up"},"value":[1764115200.5,"NaN"]}]},
            "warnings":["partial answer: store x down"]}"#,
        )
        .unwrap();
        assert_eq!(v.series.len(), 2);
        assert_eq!(v.series[0].name(), "steptop_step");
        assert_eq!(v.series[0].label("instance"), Some("n1:9464"));
        assert_eq!(
            v.series[0].points,
            vec![Point {
                time: 1764115200.5,
                value: 120.0
            }]
        );
        assert!(v.series[1].value().unwrap().is_nan());
        assert_eq!(v.warnings, vec!["partial answer: store x down".to_string()]);

        let m = parse(
            r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"host":"a"},"values":[[10,"1"],[25,"+Inf"],[40,"2.5"]]}]}}"#,
        )
        .unwrap();
        let times: Vec<f64> = m.series[0].points.iter().map(|p| p.time).collect();
        assert_eq!(times, vec![10.0, 25.0, 40.0]);
        assert_eq!(m.series[0].value(), Some(2.5));

        let e = parse(
            r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected \"}\""}"#,
        )
        .unwrap_err();
        assert!(e.contains("bad_data") && e.contains("parse error"), "{e}");
        let html = parse("<html><body>Sign in</body></html>").unwrap_err();
        assert!(html.contains("not a Prometheus API answer") && html.contains("Sign in"));
        let scalar =
            parse(r#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#);
        assert!(scalar.unwrap_err().contains("scalar"));
    }
}
