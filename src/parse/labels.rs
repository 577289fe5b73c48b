//! What a timing line's label says it measures: the forward pass, a total, the data wait, the
//! loss, the backward, the optimizer, a host-to-device copy, or a named piece of the model.
//! The words are our users' and the frameworks' own, in English and Chinese, in one table
//! (`WORDS`) to extend. A label read through a wrong decode keeps `\u{fffd}` where bytes were
//! lost (see clean.rs); such a character matches any one character of a word.

use serde::Serialize;

/// What a timing line measures, as its label says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A named piece of the model (`VRT Stage8`, `Spike模块`): the default.
    Stage,
    /// The forward pass as a whole (`前向传播总耗时`, `forward`, `fwd`).
    Forward,
    /// A total that does not say of what (`Total`, `总计`, `合计`, `总耗时`).
    Total,
    /// A total that says it is the whole step (`total step`, `step time`).
    StepTotal,
    /// Waiting for the batch (`数据加载耗时`, `data loading`).
    Data,
    /// The loss computation (`损失计算耗时`, `loss`).
    Loss,
    /// The backward pass (`反向传播`, `backward`).
    Backward,
    /// The optimizer step (`优化器`, `optimizer.step`).
    Optimizer,
    /// A host-to-device copy (`H2D`, `to_device`, `copy`).
    Copy,
}

impl Role {
    /// True for the two kinds of total line.
    pub fn is_total(self) -> bool {
        matches!(self, Role::Total | Role::StepTotal)
    }

    /// The stable name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Role::Stage => "stage",
            Role::Forward => "forward",
            Role::Total => "total",
            Role::StepTotal => "step-total",
            Role::Data => "data",
            Role::Loss => "loss",
            Role::Backward => "backward",
            Role::Optimizer => "optimizer",
            Role::Copy => "copy",
        }
    }
}

/// The meaning of one word of a label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Word {
    Forward,
    Backward,
    Data,
    Loss,
    Optimizer,
    Total,
    Step,
    /// Words that qualify without changing the meaning: `time`, `pass`, `耗时`, `计算`.
    Filler,
}

/// Every word steptop knows in timing labels, by meaning. ASCII words match whole words of the
/// lowercased label; Chinese words match pieces of a run of Chinese text, longest first.
const WORDS: &[(Word, &[&str])] = &[
    (
        Word::Forward,
        &["forward", "fwd", "前向传播", "前向", "前传", "正向传播"],
    ),
    (
        Word::Backward,
        &[
            "backward",
            "bwd",
            "backprop",
            "反向传播",
            "反向",
            "梯度计算",
        ],
    ),
    (
        Word::Data,
        &[
            "data",
            "dataloader",
            "dataloading",
            "数据加载",
            "数据读取",
            "数据",
            "加载数据",
        ],
    ),
    (Word::Loss, &["loss", "criterion", "损失计算", "损失"]),
    (
        Word::Optimizer,
        &[
            "optimizer",
            "optimiser",
            "optim",
            "优化器更新",
            "优化器",
            "参数更新",
        ],
    ),
    (
        Word::Total,
        &["total", "总计", "合计", "总耗时", "总时间", "共计", "总"],
    ),
    (
        Word::Step,
        &["step", "iteration", "iter", "单步", "每步", "整步", "步"],
    ),
    (
        Word::Filler,
        &[
            "time", "pass", "load", "loading", "model", "cost", "elapsed", "duration", "ms",
            "耗时", "时间", "计算", "用时", "加载", "读取", "更新", "处理", "模块", "阶段", "层",
        ],
    ),
];

/// Substrings of a lowercased label that mean a host-to-device copy.
const COPY_WORDS: [&str; 8] = [
    "h2d",
    "to_device",
    "todevice",
    "to device",
    "copy",
    "transfer",
    "to_cuda",
    "to_gpu",
];

/// Whether `c` is a character of some non-ASCII word above: clean.rs restores such a
/// character when a wrong decode lost one of its bytes.
pub fn known_char(c: char) -> bool {
    !c.is_ascii()
        && WORDS
            .iter()
            .any(|(_, words)| words.iter().any(|w| w.contains(c)))
}

/// What `label` says its line measures.
pub fn role(label: &str) -> Role {
    let lower = label.to_lowercase();
    if COPY_WORDS.iter().any(|w| lower.contains(w)) {
        return Role::Copy;
    }
    let mut seen = [false; 8];
    let mut unknown = false;
    for piece in lower.split(|c: char| !c.is_alphanumeric() && c != '\u{fffd}') {
        for (run, ascii) in runs(piece) {
            if ascii {
                match ascii_word(run) {
                    Some(w) => seen[w as usize] = true,
                    None => unknown = true,
                }
            } else if !cjk_words(run, &mut |w| seen[w as usize] = true) {
                unknown = true;
            }
        }
    }
    if unknown {
        return Role::Stage;
    }
    let has = |w: Word| seen[w as usize];
    match () {
        _ if has(Word::Forward) && has(Word::Backward) => Role::Stage,
        _ if has(Word::Forward) => Role::Forward,
        _ if has(Word::Backward) => Role::Backward,
        _ if has(Word::Loss) => Role::Loss,
        _ if has(Word::Optimizer) => Role::Optimizer,
        _ if has(Word::Data) => Role::Data,
        _ if has(Word::Step) => Role::StepTotal,
        _ if has(Word::Total) => Role::Total,
        _ => Role::Stage,
    }
}

/// Splits a word into its ASCII and non-ASCII runs (`vrt处理` is `vrt` and `处理`).
fn runs(piece: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut rest = piece;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let ascii = first.is_ascii();
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii() != ascii)
            .map_or(rest.len(), |(i, _)| i);
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((run, ascii))
    })
}

fn ascii_word(w: &str) -> Option<Word> {
    WORDS
        .iter()
        .find(|(_, words)| words.iter().any(|x| x.is_ascii() && *x == w))
        .map(|(meaning, _)| *meaning)
}

/// Reads a run of Chinese text as known words, longest first at each place; calls `f` with
/// each word's meaning. False when some part of the run is no known word.
fn cjk_words(run: &str, f: &mut dyn FnMut(Word)) -> bool {
    let chars: Vec<char> = run.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        let found: Vec<(Word, usize)> = WORDS
            .iter()
            .flat_map(|(meaning, words)| words.iter().map(move |w| (*meaning, *w)))
            .filter(|(_, w)| !w.is_ascii() && matches_at(&chars[at..], w))
            .map(|(meaning, w)| (meaning, w.chars().count()))
            .collect();
        let longest = found.iter().map(|(_, n)| *n).max().unwrap_or(0);
        let mut meanings = found.iter().filter(|(_, n)| *n == longest).map(|(m, _)| *m);
        let first = meanings.next();
        // Two meanings in one lost character (`\u{fffd}向传播`: 前向 or 反向?).
        match first {
            Some(meaning) if meanings.all(|m| m == meaning) => {
                f(meaning);
                at += longest;
            }
            _ => return false,
        }
    }
    true
}

/// Whether `word` is at the start of `chars`, a lost character (`\u{fffd}`) matching any one
/// character, as long as at most half of the word was lost.
fn matches_at(chars: &[char], word: &str) -> bool {
    let n = word.chars().count();
    if chars.len() < n {
        return false;
    }
    let mut lost = 0;
    for (c, w) in chars.iter().zip(word.chars()) {
        if *c == '\u{fffd}' {
            lost += 1;
        } else if *c != w {
            return false;
        }
    }
    lost * 2 <= n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_labels() {
        for (label, want) in [
            ("前向传播总耗时", Role::Forward),
            ("VRT处理", Role::Stage),
            ("Spike模块", Role::Stage),
            ("VRT Stage8", Role::Stage),
            ("Total", Role::Total),
            ("总计", Role::Total),
            ("合计", Role::Total),
            ("总耗时", Role::Total),
            ("数据加载耗时", Role::Data),
            ("损失计算耗时", Role::Loss),
            ("Loss计算", Role::Loss),
            ("反向传播", Role::Backward),
            ("优化器", Role::Optimizer),
            ("optimizer.step", Role::Optimizer),
            ("forward", Role::Forward),
            ("fwd", Role::Forward),
            ("Forward pass", Role::Forward),
            ("model forward time", Role::Forward),
            ("backward", Role::Backward),
            ("data loading", Role::Data),
            ("data_time", Role::Data),
            ("total step", Role::StepTotal),
            ("step time", Role::StepTotal),
            ("Total time", Role::Total),
            ("H2D copy", Role::Copy),
            ("to_device", Role::Copy),
            ("FeedForward", Role::Stage),
            ("forward_stage1", Role::Stage),
            ("attn", Role::Stage),
            ("Étape préliminaire", Role::Stage),
        ] {
            assert_eq!(role(label), want, "{label}");
        }
    }

    #[test]
    fn labels_with_characters_lost_to_a_wrong_decode() {
        // A broken character clean.rs could not restore is `\u{fffd}`, any one character.
        assert_eq!(role("前\u{fffd}传播总耗时"), Role::Forward);
        // 前向 or 反向: nothing to go by.
        assert_eq!(role("\u{fffd}向传播总耗时"), Role::Stage);
        assert_eq!(role("VRT处\u{fffd}"), Role::Stage);
        assert_eq!(role("数据\u{fffd}载耗时"), Role::Data);
        // Mostly lost: nothing to go by.
        assert_eq!(role("\u{fffd}\u{fffd}\u{fffd}"), Role::Stage);
    }
}
