//! Fewer bytes to the terminal for the same frames. ratatui sends only the cells that changed,
//! and a cursor move (`ESC [ row ; col H`, 8 to 10 bytes) before every cell that does not
//! follow the one written before it. A scrolled log pane changes a few digits at a time in
//! every row (`11:27:05.353727`, `iteration 215`): on a real Megatron log, one step a second,
//! the moves were most of what the live view wrote. This backend keeps what the terminal
//! shows, and where a short gap separates two changed cells of a row it writes the gap's
//! unchanged cells again, when that costs fewer bytes than the move and needs no change of
//! colour. The screen is the same; the bytes are fewer.

use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Position, Rect, Size};

/// A backend that writes through `inner`, filling short gaps between changed cells.
pub struct Coalesce<B: Backend> {
    inner: B,
    /// What the terminal shows, as far as this backend has drawn it.
    shown: Buffer,
    /// False after a partial clear: the terminal may no longer show `shown`, so no gap is
    /// filled until the next full clear.
    trusted: bool,
    /// Whether the cursor is hidden: ratatui hides it at every frame, 6 bytes each time.
    hidden: bool,
}

impl<B: Backend> Coalesce<B> {
    /// Over `inner`, whose screen of `size` is blank (a fresh alternate screen).
    pub fn blank(inner: B, size: Size) -> Self {
        Coalesce {
            inner,
            shown: Buffer::empty(Rect::new(0, 0, size.width, size.height)),
            trusted: true,
            hidden: false,
        }
    }

    #[cfg(test)]
    pub fn inner(&self) -> &B {
        &self.inner
    }
}

/// The bytes a cursor move to (x, y) takes: `ESC [ y+1 ; x+1 H`.
fn move_bytes(x: u16, y: u16) -> usize {
    let digits = |n: u32| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    4 + digits(u32::from(y) + 1) + digits(u32::from(x) + 1)
}

/// Whether `cell`, as the terminal shows it, can be written again in place of a move after
/// `before`: one cell wide, in the same colours, so no colour changes either side.
fn refill(cell: &Cell, before: &Cell) -> bool {
    let s = cell.symbol();
    s.len() == 1 && s.is_ascii() && cell.style() == before.style()
}

impl<B: Backend> Backend for Coalesce<B> {
    type Error = B::Error;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let mut out: Vec<(u16, u16, Cell)> = Vec::new();
        for (x, y, cell) in content {
            if let Some((px, py, prev)) = out.last()
                && self.trusted
                && *py == y
                && x > px + 1
                // A wide character covers the cell after it: that cell is not written.
                && prev.symbol().len() == 1
            {
                let gap = (px + 1..x).filter_map(|gx| self.shown.cell((gx, y)));
                let cells: Vec<&Cell> = gap.collect();
                let bytes: usize = cells.iter().map(|c| c.symbol().len()).sum();
                if cells.len() == usize::from(x - px - 1)
                    && bytes < move_bytes(x, y)
                    && cells.iter().all(|c| refill(c, prev))
                {
                    let from = px + 1;
                    let refilled: Vec<(u16, u16, Cell)> = (cells.into_iter().cloned())
                        .zip(from..)
                        .map(|(c, gx)| (gx, y, c))
                        .collect();
                    out.extend(refilled);
                }
            }
            out.push((x, y, cell.clone()));
        }
        // A frame that changed nothing (a reading whose figures are the same) writes nothing,
        // not even the colour resets that end every draw.
        if out.is_empty() {
            return Ok(());
        }
        for (x, y, cell) in &out {
            if let Some(c) = self.shown.cell_mut((*x, *y)) {
                *c = cell.clone();
            }
            // The cells a wide character covers show part of it: never written again.
            let wide = crate::common::display::width(cell.symbol()) as u16;
            for covered in x.saturating_add(1)..x.saturating_add(wide) {
                if let Some(c) = self.shown.cell_mut((covered, *y)) {
                    c.set_symbol("");
                }
            }
        }
        self.inner.draw(out.iter().map(|(x, y, c)| (*x, *y, c)))
    }

    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        if !self.hidden {
            self.inner.hide_cursor()?;
            self.hidden = true;
        }
        Ok(())
    }

    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.hidden = false;
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> Result<(), Self::Error> {
        self.clear_region(ClearType::All)
    }

    fn clear_region(&mut self, clear_type: ClearType) -> Result<(), Self::Error> {
        self.inner.clear_region(clear_type)?;
        // A whole screen cleared shows blanks: what an empty buffer holds.
        self.trusted = clear_type == ClearType::All;
        let size = self.inner.size()?;
        self.shown = Buffer::empty(Rect::new(0, 0, size.width, size.height));
        Ok(())
    }

    fn size(&self) -> Result<Size, Self::Error> {
        self.inner.size()
    }

    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::style::{Color, Style};
    use ratatui::text::Line;
    use ratatui::widgets::Paragraph;

    /// What a terminal shows of `buf`: each cell's symbol and style, but for the cells a wide
    /// character to their left covers (ratatui sends nothing there).
    type Shown = (u16, u16, String, Style);

    fn visible(buf: &Buffer) -> Vec<Shown> {
        let mut out = Vec::new();
        for y in 0..buf.area.height {
            let mut covered = 0;
            for x in 0..buf.area.width {
                let c = &buf[(x, y)];
                if covered > 0 {
                    covered -= 1;
                    continue;
                }
                covered = crate::common::display::width(c.symbol()).saturating_sub(1);
                out.push((x, y, c.symbol().to_string(), c.style()));
            }
        }
        out
    }

    /// What a `TestBackend` (which applies every cell it is sent) shows after each of
    /// `frames`, drawn through `Coalesce` and straight: the same, frame by frame.
    fn screens(frames: &[Vec<Line<'static>>], w: u16, h: u16) -> Vec<(Vec<Shown>, Vec<Shown>)> {
        let mut coalesced = Terminal::new(Coalesce::blank(TestBackend::new(w, h), Size::new(w, h)))
            .expect("terminal");
        let mut straight = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        let mut out = Vec::new();
        for lines in frames {
            let draw =
                |f: &mut ratatui::Frame| f.render_widget(Paragraph::new(lines.clone()), f.area());
            coalesced.draw(draw).expect("draw");
            straight.draw(draw).expect("draw");
            out.push((
                visible(coalesced.backend().inner().buffer()),
                visible(straight.backend().buffer()),
            ));
        }
        out
    }

    /// The terminal shows what ratatui alone would have made it show, whatever the frames
    /// hold: wide characters, colours, gaps of every length.
    fn line() -> impl Strategy<Value = Line<'static>> {
        let piece = prop_oneof![
            "[a-c ]{1,6}".prop_map(|s| (s, Style::default())),
            "[a-c0-9]{1,4}".prop_map(|s| (s, Style::default().fg(Color::Cyan))),
            "[処理]{1,2}".prop_map(|s| (s, Style::default())),
        ];
        prop::collection::vec(piece, 0..6).prop_map(|ps| {
            Line::from(
                ps.into_iter()
                    .map(|(s, st)| ratatui::text::Span::styled(s, st))
                    .collect::<Vec<_>>(),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn the_terminal_shows_each_frame(
            frames in prop::collection::vec(prop::collection::vec(line(), 1..4), 1..6)
        ) {
            for (shown, drawn) in screens(&frames, 16, 3) {
                prop_assert_eq!(shown, drawn);
            }
        }
    }

    /// Counts the bytes written through it.
    #[derive(Clone, Default)]
    struct Counted(std::rc::Rc<std::cell::Cell<usize>>);

    impl std::io::Write for Counted {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.set(self.0.get() + buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Bytes written to draw `frames` after the first, through `backend`.
    fn bytes_of<B: Backend>(
        backend: B,
        area: Rect,
        count: &Counted,
        frames: &[Vec<Line<'static>>],
    ) -> usize {
        use ratatui::{TerminalOptions, Viewport};
        let options = TerminalOptions {
            viewport: Viewport::Fixed(area),
        };
        let mut t = Terminal::with_options(backend, options).expect("terminal");
        let mut first = 0;
        for (i, lines) in frames.iter().enumerate() {
            t.draw(|f| f.render_widget(Paragraph::new(lines.clone()), f.area()))
                .expect("draw");
            if i == 0 {
                first = count.0.get();
            }
        }
        count.0.get() - first
    }

    /// A log pane scrolled one line a frame, its rows a real Megatron log's timestamps and
    /// iterations: every row changes a few digits at a time.
    #[test]
    fn a_scrolled_log_takes_fewer_bytes() {
        use ratatui::backend::CrosstermBackend;
        let rows: Vec<String> = (0..30)
            .map(|i| {
                format!(
                    "[2026-04-15 11:{:02}:{:02}.{:06}] iteration {:8}/     500",
                    26 + i / 30,
                    (i * 2) % 60,
                    i * 7919 % 1_000_000,
                    200 + i
                )
            })
            .collect();
        let frames: Vec<Vec<Line<'static>>> = (0..10)
            .map(|k| {
                rows[k..k + 20]
                    .iter()
                    .map(|r| Line::from(r.clone()))
                    .collect()
            })
            .collect();
        let area = Rect::new(0, 0, 60, 20);
        let plain = Counted::default();
        let moved = bytes_of(CrosstermBackend::new(plain.clone()), area, &plain, &frames);
        let filled = Counted::default();
        let backend = Coalesce::blank(CrosstermBackend::new(filled.clone()), area.as_size());
        let coalesced = bytes_of(backend, area, &filled, &frames);
        assert!(
            coalesced * 10 < moved * 8,
            "{coalesced} bytes against {moved}"
        );
    }
}
