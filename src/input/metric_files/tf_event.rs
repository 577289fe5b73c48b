//! TensorBoard's `Event` protobuf, the fields steptop reads, as messages derived in Rust (the
//! field numbers are those of tensorflow/core/util/event.proto and summary.proto). A scalar
//! is a `simple_value` (tensorboardX, TF1) or a one-value `tensor` (the scalars plugin of
//! TF2 and of newer `torch.utils.tensorboard`).

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Event {
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    #[prost(int64, tag = "2")]
    pub step: i64,
    #[prost(string, optional, tag = "3")]
    pub file_version: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub summary: Option<Summary>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<Value>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Value {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(float, optional, tag = "2")]
    pub simple_value: Option<f32>,
    #[prost(message, optional, tag = "8")]
    pub tensor: Option<Tensor>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Tensor {
    /// TensorFlow's DataType: 1 float, 2 double, 3 int32, 9 int64, 19 half.
    #[prost(int32, tag = "1")]
    pub dtype: i32,
    #[prost(message, optional, tag = "2")]
    pub shape: Option<Shape>,
    #[prost(bytes = "vec", tag = "4")]
    pub content: Vec<u8>,
    #[prost(float, repeated, tag = "5")]
    pub float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    pub double_val: Vec<f64>,
    #[prost(int32, repeated, tag = "7")]
    pub int_val: Vec<i32>,
    #[prost(int64, repeated, tag = "10")]
    pub int64_val: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Shape {
    #[prost(message, repeated, tag = "2")]
    pub dim: Vec<Dim>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Dim {
    #[prost(int64, tag = "1")]
    pub size: i64,
}

const DT_FLOAT: i32 = 1;
const DT_DOUBLE: i32 = 2;
const DT_INT32: i32 = 3;
const DT_INT64: i32 = 9;

impl Tensor {
    /// The one number of a scalar tensor; None for a histogram, an image or text.
    pub fn scalar(&self) -> Option<f64> {
        if self
            .shape
            .as_ref()
            .is_some_and(|s| s.dim.iter().any(|d| d.size != 1))
        {
            return None;
        }
        let one = |n: usize| n == 1;
        if one(self.float_val.len()) {
            return Some(f64::from(self.float_val[0]));
        }
        if one(self.double_val.len()) {
            return Some(self.double_val[0]);
        }
        if one(self.int_val.len()) && self.dtype == DT_INT32 {
            return Some(f64::from(self.int_val[0]));
        }
        if one(self.int64_val.len()) {
            return Some(self.int64_val[0] as f64);
        }
        let c = &self.content;
        match (self.dtype, c.len()) {
            (DT_FLOAT, 4) => Some(f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
            (DT_DOUBLE, 8) => Some(f64::from_le_bytes(c[..8].try_into().ok()?)),
            (DT_INT32, 4) => Some(f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
            (DT_INT64, 8) => Some(i64::from_le_bytes(c[..8].try_into().ok()?) as f64),
            _ => None,
        }
    }
}

impl Event {
    pub fn decode_from(data: &[u8]) -> Result<Event, String> {
        Event::decode(data).map_err(|e| format!("not a TensorBoard event ({e})"))
    }

    /// The scalars this event carries, by tag.
    pub fn scalars(&self) -> impl Iterator<Item = (&str, f64)> {
        self.summary.iter().flat_map(|s| &s.value).filter_map(|v| {
            let x = v
                .simple_value
                .map(f64::from)
                .or_else(|| v.tensor.as_ref()?.scalar())?;
            Some((v.tag.as_str(), x))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_come_as_simple_values_or_one_value_tensors() {
        let e = Event {
            wall_time: 1.7e9,
            step: 12,
            file_version: None,
            summary: Some(Summary {
                value: vec![
                    Value {
                        tag: "loss".into(),
                        simple_value: Some(0.5),
                        tensor: None,
                    },
                    Value {
                        tag: "lr".into(),
                        simple_value: None,
                        tensor: Some(Tensor {
                            dtype: DT_FLOAT,
                            shape: Some(Shape::default()),
                            content: 0.25f32.to_le_bytes().to_vec(),
                            ..Tensor::default()
                        }),
                    },
                    Value {
                        tag: "hist".into(),
                        simple_value: None,
                        tensor: Some(Tensor {
                            dtype: DT_DOUBLE,
                            shape: Some(Shape {
                                dim: vec![Dim { size: 3 }],
                            }),
                            double_val: vec![1.0, 2.0, 3.0],
                            ..Tensor::default()
                        }),
                    },
                ],
            }),
        };
        let bytes = e.encode_to_vec();
        let back = Event::decode_from(&bytes).unwrap();
        assert_eq!(back.step, 12);
        let s: Vec<(&str, f64)> = back.scalars().collect();
        assert_eq!(s, vec![("loss", 0.5), ("lr", 0.25)]);
        assert!(Event::decode_from(&[0xff, 0xff]).is_err());
    }
}
