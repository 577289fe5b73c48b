//! Launchers: the programs that start the training script as child processes (torchrun,
//! deepspeed, accelerate), told apart from the script itself by its command line.

/// Programs that start the training script as child processes, by name.
const LAUNCHER_PROGRAMS: [&str; 3] = ["torchrun", "deepspeed", "accelerate"];
/// The same, run as `python -m MODULE`.
const LAUNCHER_MODULES: [&str; 4] = [
    "torch.distributed.run",
    "torch.distributed.launch",
    "deepspeed.launcher.launch",
    "accelerate.commands.launch",
];

/// The launcher a command line runs, if any: a launcher program, run as itself or as the
/// script of a Python interpreter (`python3 /venv/bin/torchrun ...`), or a launcher module
/// (`python -m torch.distributed.run ...`).
pub fn launcher(command: &str) -> Option<&'static str> {
    let program_named = |word: &str| {
        let base = word.rsplit('/').next().unwrap_or(word);
        LAUNCHER_PROGRAMS.iter().find(|p| **p == base).copied()
    };
    let mut words = command.split_whitespace();
    let program = words.next()?;
    if let Some(p) = program_named(program) {
        return Some(p);
    }
    if !program.rsplit('/').next()?.starts_with("python") {
        return None;
    }
    // The interpreter's own options come before the script or the module.
    while let Some(word) = words.next() {
        if word == "-m" {
            let module = words.next()?;
            return LAUNCHER_MODULES.iter().find(|m| **m == module).copied();
        }
        if !word.starts_with('-') {
            return program_named(word);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_are_told_by_program_or_module() {
        assert_eq!(
            launcher("/usr/bin/python3 /venv/bin/torchrun --nproc_per_node 8 train.py"),
            Some("torchrun")
        );
        assert_eq!(launcher("torchrun train.py"), Some("torchrun"));
        assert_eq!(
            launcher("python -u -m torch.distributed.run --nproc_per_node=2 train.py"),
            Some("torch.distributed.run")
        );
        assert_eq!(
            launcher("python -m deepspeed.launcher.launch --world_info=e30="),
            Some("deepspeed.launcher.launch")
        );
        assert_eq!(launcher("accelerate launch train.py"), Some("accelerate"));
        // The training script itself, and modules that are not launchers.
        assert_eq!(launcher("python train.py --launcher torchrun"), None);
        assert_eq!(launcher("python -m my_project.train"), None);
        assert_eq!(launcher("python -m"), None);
        assert_eq!(launcher("/opt/torchrun_helpers/train.py"), None);
    }
}
