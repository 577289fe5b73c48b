//! Which GPUs to read and how to number them. NVML numbers GPUs in PCI bus order; the trainer
//! sees them as CUDA numbers them, after CUDA_VISIBLE_DEVICES (which Slurm and container
//! runtimes set too) has picked and renumbered them. `--gpus` takes NVML indices (`0,2`), UUIDs
//! or their unique prefixes as `nvidia-smi -L` prints them (`GPU-5a1f…`, `MIG-…`), or `cuda`:
//! the GPUs the trainer's CUDA_VISIBLE_DEVICES gives it, shown with CUDA's numbers.

/// `--gpus` as given.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuSelect {
    Listed(Vec<GpuId>),
    /// The GPUs CUDA_VISIBLE_DEVICES makes visible, numbered as CUDA numbers them.
    Cuda,
}

#[derive(Clone, Debug, PartialEq)]
pub enum GpuId {
    Index(u32),
    /// A UUID or a unique prefix of one (`GPU-…` or `MIG-…`).
    Uuid(String),
}

/// Parses `--gpus`: `cuda`, or a comma-separated list of NVML indices and UUIDs.
pub fn parse(text: &str) -> Result<GpuSelect, String> {
    if text.trim().eq_ignore_ascii_case("cuda") {
        return Ok(GpuSelect::Cuda);
    }
    let ids = text
        .split(',')
        .map(str::trim)
        .map(|item| {
            if let Ok(i) = item.parse() {
                Ok(GpuId::Index(i))
            } else if item.starts_with("GPU-") || item.starts_with("MIG-") {
                Ok(GpuId::Uuid(item.to_string()))
            } else {
                Err(format!(
                    "'{item}' is not a GPU: give NVML indices (0,2), UUIDs as nvidia-smi -L \
                     prints them (GPU-…, MIG-…), or cuda for CUDA_VISIBLE_DEVICES"
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(GpuSelect::Listed(ids))
}

/// A device NVML can open: a whole GPU (`slice` None) or one MIG device of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Known {
    pub index: u32,
    pub slice: Option<u32>,
    pub uuid: Option<String>,
    pub name: String,
}

/// A device to read, with its CUDA number under `--gpus cuda`.
#[derive(Clone, Debug, PartialEq)]
pub struct Chosen {
    pub index: u32,
    pub slice: Option<u32>,
    pub cuda: Option<u32>,
}

/// What `resolve` decided: the devices and, when the numbering is not NVML's or not certain,
/// a sentence saying so for the GPU pane.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub chosen: Vec<Chosen>,
    pub note: Option<String>,
}

/// The environment `--gpus cuda` reads: the trainer's once it is known, steptop's own before.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CudaEnv {
    pub visible: Option<String>,
    pub order: Option<String>,
    /// The trainer's pid when the environment is the trainer's.
    pub trainer: Option<u32>,
}

impl CudaEnv {
    /// steptop's own environment (it runs in the trainer's job or shell, as a rule).
    pub fn from_env() -> Self {
        CudaEnv {
            visible: std::env::var("CUDA_VISIBLE_DEVICES").ok(),
            order: std::env::var("CUDA_DEVICE_ORDER").ok(),
            trainer: None,
        }
    }

    /// A process's environment as /proc/PID/environ holds it (NUL-separated); None when it
    /// cannot be read (another user's process).
    pub fn of_process(proc_root: &std::path::Path, pid: u32) -> Option<Self> {
        let env = crate::probe::environ::Environ::of_process(proc_root, pid)?;
        Some(CudaEnv {
            visible: env.var("CUDA_VISIBLE_DEVICES"),
            order: env.var("CUDA_DEVICE_ORDER"),
            trainer: Some(pid),
        })
    }

    /// Whose environment it is, for the note: `the trainer's (pid 4242)`.
    fn whose(&self) -> String {
        match self.trainer {
            Some(pid) => format!("the trainer's (pid {pid})"),
            None => "steptop's own".into(),
        }
    }
}

/// The devices of `known` (every device NVML could open; `count` counts the others too, and
/// `unopened` says why they could not be) that `select` names. None selects everything. A
/// selected whole GPU brings its MIG devices; a selected MIG device brings its parent, whose
/// power and clocks it shares.
pub fn resolve(
    select: Option<&GpuSelect>,
    known: &[Known],
    count: u32,
    unopened: &[(u32, String)],
    env: &CudaEnv,
) -> Result<Resolved, String> {
    let mut picked: Vec<(usize, Option<u32>)> = Vec::new();
    let mut note = None;
    match select {
        None => picked.extend((0..known.len()).map(|i| (i, None))),
        Some(GpuSelect::Listed(ids)) => {
            for id in ids {
                let at = match id {
                    GpuId::Index(i) if *i >= count => {
                        return Err(format!(
                            "there is no GPU {i}: this machine has {count} (0 to {})",
                            count.saturating_sub(1)
                        ));
                    }
                    GpuId::Index(i) => known
                        .iter()
                        .position(|k| k.index == *i && k.slice.is_none())
                        .ok_or_else(|| match unopened.iter().find(|(u, _)| u == i) {
                            Some((_, why)) => why.clone(),
                            None => format!("GPU {i} cannot be opened"),
                        })?,
                    GpuId::Uuid(u) => by_uuid(known, u)?,
                };
                picked.push((at, None));
            }
        }
        Some(GpuSelect::Cuda) => {
            let (ids, why) = cuda_visible(env, known)?;
            for (cuda, at) in ids.into_iter().enumerate() {
                picked.push((at, Some(cuda as u32)));
            }
            note = Some(why);
            let whole: Vec<&Known> = known.iter().filter(|k| k.slice.is_none()).collect();
            let mixed = whole.iter().any(|k| k.name != whole[0].name);
            let by_bus = env.order.as_deref() == Some("PCI_BUS_ID");
            let by_number = env
                .visible
                .as_deref()
                .is_some_and(|v| v.split(',').any(|e| e.trim().parse::<u32>().is_ok()));
            if mixed && !by_bus && (by_number || env.visible.is_none()) {
                note = Some(format!(
                    "{} CUDA numbers different GPUs fastest first unless CUDA_DEVICE_ORDER=\
                     PCI_BUS_ID, so these numbers may not be the trainer's: set it, or give \
                     --gpus UUIDs",
                    note.unwrap_or_default()
                ));
            }
        }
    }
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut add = |k: &Known, cuda: Option<u32>| match chosen
        .iter_mut()
        .find(|c| c.index == k.index && c.slice == k.slice)
    {
        Some(c) => c.cuda = c.cuda.or(cuda),
        None => chosen.push(Chosen {
            index: k.index,
            slice: k.slice,
            cuda,
        }),
    };
    for (at, cuda) in picked {
        let k = &known[at];
        match k.slice {
            None => {
                add(k, cuda);
                for s in known
                    .iter()
                    .filter(|s| s.index == k.index && s.slice.is_some())
                {
                    add(s, None);
                }
            }
            Some(_) => {
                if let Some(parent) = known
                    .iter()
                    .find(|p| p.index == k.index && p.slice.is_none())
                {
                    add(parent, None);
                }
                add(k, cuda);
            }
        }
    }
    // In CUDA's order when CUDA numbers them; a GPU's MIG devices stay under it.
    let order = |c: &Chosen| {
        let cuda = chosen
            .iter()
            .filter(|o| o.index == c.index)
            .filter_map(|o| o.cuda)
            .min()
            .unwrap_or(u32::MAX);
        (cuda, c.index, c.slice.map_or(0, |s| s + 1))
    };
    let mut keyed: Vec<((u32, u32, u32), Chosen)> =
        chosen.iter().map(|c| (order(c), c.clone())).collect();
    keyed.sort_by_key(|(k, _)| *k);
    let chosen = keyed.into_iter().map(|(_, c)| c).collect();
    Ok(Resolved { chosen, note })
}

/// The device whose UUID is `uuid` or starts with it, when exactly one does.
fn by_uuid(known: &[Known], uuid: &str) -> Result<usize, String> {
    let hits: Vec<usize> = known
        .iter()
        .enumerate()
        .filter(|(_, k)| k.uuid.as_deref().is_some_and(|u| u.starts_with(uuid)))
        .map(|(i, _)| i)
        .collect();
    match hits[..] {
        [one] => Ok(one),
        [] => Err(format!(
            "no GPU has the UUID {uuid}: `nvidia-smi -L` lists them"
        )),
        _ => Err(format!(
            "{uuid} is the start of {} GPUs' UUIDs: give more of it",
            hits.len()
        )),
    }
}

/// The devices CUDA_VISIBLE_DEVICES makes visible, in CUDA's order, with a sentence on the
/// numbering. Like CUDA, the list ends at its first entry that names no device.
fn cuda_visible(env: &CudaEnv, known: &[Known]) -> Result<(Vec<usize>, String), String> {
    let whole: Vec<usize> = (0..known.len())
        .filter(|i| known[*i].slice.is_none())
        .collect();
    let whose = env.whose();
    let Some(list) = env.visible.as_deref() else {
        return Ok((
            whole,
            format!(
                "GPUs numbered as CUDA numbers them (CUDA_VISIBLE_DEVICES is not set in \
                 {whose} environment: all)"
            ),
        ));
    };
    let mut ids = Vec::new();
    let mut stopped = None;
    for entry in list.split(',').map(str::trim) {
        let at = match entry.parse::<usize>() {
            Ok(n) => whole.get(n).copied(),
            Err(_) if entry.starts_with("GPU-") || entry.starts_with("MIG-") => {
                by_uuid(known, entry).ok()
            }
            Err(_) => None,
        };
        match at {
            Some(at) if !ids.contains(&at) => ids.push(at),
            _ => {
                stopped = Some(entry.to_string());
                break;
            }
        }
    }
    if ids.is_empty() {
        return Err(format!(
            "CUDA_VISIBLE_DEVICES={list} ({whose} environment) makes no GPU visible to CUDA \
             here: its first entry names none of the {} GPUs this process can open (CUDA \
             numbers those from 0)",
            whole.len()
        ));
    }
    let mut why = format!(
        "GPUs numbered as CUDA numbers them (CUDA_VISIBLE_DEVICES={list} in {whose} \
         environment)."
    );
    if let Some(e) = stopped {
        why.push_str(&format!(
            " CUDA ignores the list from '{e}' on: it names no GPU here, or one already listed."
        ));
    }
    Ok((ids, why))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: u32, name: &str) -> Known {
        Known {
            index,
            slice: None,
            uuid: Some(format!("GPU-{index}{index}aa-0000")),
            name: name.into(),
        }
    }

    fn four() -> Vec<Known> {
        (0..4).map(|i| gpu(i, "NVIDIA H100 80GB HBM3")).collect()
    }

    fn picked(r: &Resolved) -> Vec<(u32, Option<u32>, Option<u32>)> {
        r.chosen
            .iter()
            .map(|c| (c.index, c.slice, c.cuda))
            .collect()
    }

    #[test]
    fn gpus_are_named_by_index_uuid_or_prefix() {
        let sel = parse("2, GPU-00aa").expect("parses");
        let r = resolve(Some(&sel), &four(), 4, &[], &CudaEnv::default()).expect("resolves");
        assert_eq!(picked(&r), [(0, None, None), (2, None, None)]);
        assert_eq!(r.note, None);
        assert!(parse("gpu0").unwrap_err().contains("'gpu0' is not a GPU"));
        let sel = parse("5").expect("parses");
        let e = resolve(Some(&sel), &four(), 4, &[], &CudaEnv::default()).unwrap_err();
        assert_eq!(e, "there is no GPU 5: this machine has 4 (0 to 3)");
        let sel = parse("GPU-").expect("parses");
        let e = resolve(Some(&sel), &four(), 4, &[], &CudaEnv::default()).unwrap_err();
        assert!(e.contains("start of 4 GPUs' UUIDs"), "{e}");
    }

    #[test]
    fn cuda_renumbers_what_cuda_visible_devices_shows() {
        let env = CudaEnv {
            visible: Some("2,GPU-33aa,7,1".into()),
            ..CudaEnv::default()
        };
        let r = resolve(Some(&GpuSelect::Cuda), &four(), 4, &[], &env).expect("resolves");
        // CUDA stops at 7: GPU 1 is not visible to it.
        assert_eq!(picked(&r), [(2, None, Some(0)), (3, None, Some(1))]);
        let note = r.note.expect("note");
        assert!(
            note.contains("CUDA_VISIBLE_DEVICES=2,GPU-33aa,7,1"),
            "{note}"
        );
        assert!(note.contains("from '7' on"), "{note}");
        let env = CudaEnv {
            visible: Some("3,0".into()),
            ..CudaEnv::default()
        };
        let r = resolve(Some(&GpuSelect::Cuda), &four(), 4, &[], &env).expect("resolves");
        assert_eq!(picked(&r), [(3, None, Some(0)), (0, None, Some(1))]);
        let none = CudaEnv {
            visible: Some("".into()),
            ..CudaEnv::default()
        };
        let e = resolve(Some(&GpuSelect::Cuda), &four(), 4, &[], &none).unwrap_err();
        assert!(e.contains("makes no GPU visible"), "{e}");
    }

    #[test]
    fn a_processs_environment_is_read_from_proc() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("77")).expect("pid dir");
        std::fs::write(
            dir.path().join("77/environ"),
            b"HOME=/root\0CUDA_VISIBLE_DEVICES_X=9\0CUDA_VISIBLE_DEVICES=3,1\0LANG=C\0",
        )
        .expect("environ");
        let env = CudaEnv::of_process(dir.path(), 77).expect("readable");
        assert_eq!(env.visible.as_deref(), Some("3,1"));
        assert_eq!(env.order, None);
        assert_eq!(env.trainer, Some(77));
        assert_eq!(CudaEnv::of_process(dir.path(), 78), None);
    }

    #[test]
    fn mixed_gpus_numbered_by_cuda_say_the_order_is_uncertain() {
        let mut known = four();
        known[3].name = "NVIDIA GeForce RTX 4090".into();
        let env = CudaEnv {
            visible: Some("0,3".into()),
            ..CudaEnv::default()
        };
        let r = resolve(Some(&GpuSelect::Cuda), &known, 4, &[], &env).expect("resolves");
        assert!(r.note.expect("note").contains("CUDA_DEVICE_ORDER"));
        let env = CudaEnv {
            order: Some("PCI_BUS_ID".into()),
            ..env
        };
        let r = resolve(Some(&GpuSelect::Cuda), &known, 4, &[], &env).expect("resolves");
        assert!(!r.note.expect("note").contains("CUDA_DEVICE_ORDER"));
    }

    #[test]
    fn a_mig_device_brings_its_parent_and_a_parent_its_mig_devices() {
        let mut known = four();
        for s in 0..2 {
            known.push(Known {
                index: 1,
                slice: Some(s),
                uuid: Some(format!("MIG-1{s}bb")),
                name: "NVIDIA A100 MIG 3g.40gb".into(),
            });
        }
        let sel = parse("MIG-11").expect("parses");
        let r = resolve(Some(&sel), &known, 4, &[], &CudaEnv::default()).expect("resolves");
        assert_eq!(picked(&r), [(1, None, None), (1, Some(1), None)]);
        let sel = parse("1").expect("parses");
        let r = resolve(Some(&sel), &known, 4, &[], &CudaEnv::default()).expect("resolves");
        assert_eq!(
            picked(&r),
            [(1, None, None), (1, Some(0), None), (1, Some(1), None)]
        );
        let env = CudaEnv {
            visible: Some("MIG-10bb".into()),
            ..CudaEnv::default()
        };
        let r = resolve(Some(&GpuSelect::Cuda), &known, 4, &[], &env).expect("resolves");
        assert_eq!(picked(&r), [(1, None, None), (1, Some(0), Some(0))]);
    }

    #[test]
    fn a_hidden_gpu_named_by_index_says_it_cannot_be_opened() {
        let known: Vec<Known> = four().into_iter().filter(|k| k.index != 1).collect();
        let sel = parse("1").expect("parses");
        let why = [(1, "GPU 1 is hidden from this process".to_string())];
        let e = resolve(Some(&sel), &known, 4, &why, &CudaEnv::default()).unwrap_err();
        assert_eq!(e, "GPU 1 is hidden from this process");
    }
}
