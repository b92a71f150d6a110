//! The writing end every streaming sink shares: records go out until one
//! write fails; that error is kept for the front end and the sink asks the
//! pipeline to stop (a closed pipe ends the run quietly, anything else is
//! reported).

use std::fmt::Display;
use std::io::{self, Write};

use serde::Serialize;

use crate::pipeline::Flow;

/// An output that remembers its first error.
pub struct Out<W: Write> {
    w: W,
    error: Option<io::Error>,
}

impl<W: Write> Out<W> {
    /// Writes to `w`.
    pub fn new(w: W) -> Self {
        Out { w, error: None }
    }

    /// Writes one record with `f`; after a failure nothing more is written.
    pub fn record(&mut self, f: impl FnOnce(&mut W) -> io::Result<()>) -> Flow {
        if self.error.is_some() {
            return Flow::Stop;
        }
        match f(&mut self.w) {
            Ok(()) => Flow::Continue,
            Err(e) => {
                self.error = Some(e);
                Flow::Stop
            }
        }
    }

    /// One JSON object on a line of its own.
    pub fn json_line<T: Serialize + ?Sized>(&mut self, v: &T) -> Flow {
        self.record(|w| {
            serde_json::to_writer(&mut *w, v)?;
            writeln!(w)
        })
    }

    /// One line of text.
    pub fn text_line(&mut self, s: impl Display) -> Flow {
        self.record(|w| writeln!(w, "{s}"))
    }

    /// Flushes what is buffered (keeping the error if it fails).
    pub fn flush(&mut self) -> Flow {
        self.record(Write::flush)
    }

    /// The first write that failed, if one did.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }
}
