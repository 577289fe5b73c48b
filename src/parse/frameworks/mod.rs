//! Framework-specific line shapes that are not progress bars: one small file per framework.

mod darknet;
mod deepspeed;
mod detectron2;
mod fairseq;
mod hf;
mod llmc;
mod megatron;
mod meters;
mod mllog;
mod nanogpt;
mod olmo;
mod timers;
mod timm;
mod torchtitan;

pub use darknet::darknet;
pub use deepspeed::deepspeed;
pub use detectron2::detectron2;
pub use fairseq::{accelerate, fairseq};
pub use hf::{dict_line, metrics_line};
pub use llmc::{llm_step, llmc_file};
pub use megatron::megatron;
pub use meters::{headless_meter, meters};
pub use mllog::mllog;
pub use nanogpt::nanogpt;
pub use olmo::{figure as record_figure, header as record_header};
pub use timers::{
    across_ranks_header, across_ranks_line, profiler_header, profiler_row, time_line,
};
pub use timm::timm;
pub use torchtitan::{mesh, torchtitan};

#[cfg(test)]
pub(crate) mod test_util {
    use crate::parse::record::{Record, StepRecord};

    /// The last step record, or a panic naming what was there instead.
    pub fn step(out: &[Record]) -> &StepRecord {
        match out.iter().rev().find(|r| matches!(r, Record::Step(_))) {
            Some(Record::Step(s)) => s,
            _ => panic!("no step record in {out:?}"),
        }
    }
}
