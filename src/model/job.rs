//! Which job, node and rank a steptop watches, from the variables Slurm and the PyTorch
//! launchers (torchrun, deepspeed, accelerate) set for the processes they start. Pure: the
//! environment is read at the edges (`probe::job`).

use serde::{Deserialize, Serialize};

/// A job's identity as its scheduler and launcher give it; each part only when known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobIdentity {
    /// `SLURM_JOB_ID`, else torchrun's `TORCHELASTIC_RUN_ID` (its `--rdzv-id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `SLURM_JOB_NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The node's index in the job: `SLURM_NODEID`, else the launcher's `GROUP_RANK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// The process's global rank: `RANK`, else `SLURM_PROCID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Its rank on the node: `LOCAL_RANK`, else `SLURM_LOCALID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    /// Processes in the job: `WORLD_SIZE`, else `SLURM_NTASKS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
}

impl JobIdentity {
    /// The identity the variables give (`var` looks one up). The launcher's variables come
    /// before Slurm's for ranks: under `srun torchrun`, Slurm counts tasks (one per node) while
    /// torchrun counts the training processes.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> JobIdentity {
        let text = |name: &str| {
            var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let number = |name: &str| text(name).and_then(|v| v.parse::<u32>().ok());
        JobIdentity {
            id: text("SLURM_JOB_ID").or_else(|| text("TORCHELASTIC_RUN_ID")),
            name: text("SLURM_JOB_NAME"),
            node: number("SLURM_NODEID").or_else(|| number("GROUP_RANK")),
            rank: number("RANK").or_else(|| number("SLURM_PROCID")),
            local_rank: number("LOCAL_RANK").or_else(|| number("SLURM_LOCALID")),
            world_size: number("WORLD_SIZE").or_else(|| number("SLURM_NTASKS")),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == JobIdentity::default()
    }

    /// Each part from `self`, else from `other`.
    pub fn or(&self, other: &JobIdentity) -> JobIdentity {
        JobIdentity {
            id: self.id.clone().or_else(|| other.id.clone()),
            name: self.name.clone().or_else(|| other.name.clone()),
            node: self.node.or(other.node),
            rank: self.rank.or(other.rank),
            local_rank: self.local_rank.or(other.local_rank),
            world_size: self.world_size.or(other.world_size),
        }
    }

    /// The same job seen from the node: without the ranks of one process (a launcher's
    /// environment, or the first of the processes it started, stands for all of them).
    pub fn node_level(self) -> JobIdentity {
        JobIdentity {
            rank: None,
            local_rank: None,
            ..self
        }
    }

    /// As labels on metrics, in a fixed order: `job_id`, `job_name`, `node_rank`,
    /// `process_rank`, `local_rank` (`rank` is the logged rank's label).
    pub fn labels(&self) -> Vec<(&'static str, String)> {
        let number = |n: Option<u32>| n.map(|n| n.to_string());
        [
            ("job_id", self.id.clone()),
            ("job_name", self.name.clone()),
            ("node_rank", number(self.node)),
            ("process_rank", number(self.rank)),
            ("local_rank", number(self.local_rank)),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect()
    }
}

/// Who a steptop's figures are about: the node's name and the job identity steptop was
/// started in; the trainer's own environment, once read, comes first (`job`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeIdentity {
    pub host: Option<String>,
    pub own_job: JobIdentity,
}

impl NodeIdentity {
    /// The job identity now: the trainer's, filled in from steptop's own.
    pub fn job(&self, trainers: Option<&JobIdentity>) -> JobIdentity {
        trainers.map_or_else(|| self.own_job.clone(), |t| t.or(&self.own_job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(vars: &[(&str, &str)]) -> JobIdentity {
        JobIdentity::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn a_slurm_task_is_read_from_slurms_variables() {
        let j = of(&[
            ("SLURM_JOB_ID", "4180321"),
            ("SLURM_JOB_NAME", "llama-8b"),
            ("SLURM_NODEID", "3"),
            ("SLURM_PROCID", "27"),
            ("SLURM_LOCALID", "3"),
            ("SLURM_NTASKS", "64"),
        ]);
        assert_eq!(
            j,
            JobIdentity {
                id: Some("4180321".into()),
                name: Some("llama-8b".into()),
                node: Some(3),
                rank: Some(27),
                local_rank: Some(3),
                world_size: Some(64),
            }
        );
        assert_eq!(
            j.labels(),
            vec![
                ("job_id", "4180321".to_string()),
                ("job_name", "llama-8b".to_string()),
                ("node_rank", "3".to_string()),
                ("process_rank", "27".to_string()),
                ("local_rank", "3".to_string()),
            ]
        );
    }

    #[test]
    fn torchruns_ranks_come_before_slurms_tasks() {
        // `srun --ntasks-per-node 1 torchrun --nproc-per-node 8`: Slurm's task is the node.
        let j = of(&[
            ("SLURM_JOB_ID", "77"),
            ("SLURM_NODEID", "1"),
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("RANK", "13"),
            ("LOCAL_RANK", "5"),
            ("GROUP_RANK", "1"),
            ("WORLD_SIZE", "16"),
            ("TORCHELASTIC_RUN_ID", "none"),
        ]);
        assert_eq!(
            (j.rank, j.local_rank, j.world_size),
            (Some(13), Some(5), Some(16))
        );
        assert_eq!((j.id.as_deref(), j.node), (Some("77"), Some(1)));
        // torchrun alone: the rendezvous id names the job, GROUP_RANK the node.
        let t = of(&[
            ("TORCHELASTIC_RUN_ID", "exp42"),
            ("GROUP_RANK", "2"),
            ("RANK", "x"),
        ]);
        assert_eq!(
            (t.id.as_deref(), t.node, t.rank),
            (Some("exp42"), Some(2), None)
        );
    }

    #[test]
    fn parts_fill_in_from_another_identity_and_a_node_drops_process_ranks() {
        let trainer = of(&[("RANK", "4"), ("LOCAL_RANK", "0"), ("GROUP_RANK", "1")]);
        let own = of(&[("SLURM_JOB_ID", "9"), ("SLURM_NODEID", "7")]);
        let j = trainer.or(&own);
        assert_eq!(
            (j.id.as_deref(), j.node, j.rank),
            (Some("9"), Some(1), Some(4))
        );
        let n = j.node_level();
        assert_eq!((n.rank, n.local_rank, n.node), (None, None, Some(1)));
        assert!(of(&[("SLURM_JOB_ID", " ")]).is_empty());
    }
}
