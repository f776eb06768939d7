//! The `sdnlab>` prompt: line editing, history (`~/.sdnlab_history`) and
//! tab completion of commands and node names through rustyline, each line
//! handed to the [`Console`]. Ctrl-C at the prompt clears the line; Ctrl-C
//! while a command runs stops that command (it reaches the child, and the
//! console only notes it); Ctrl-D or `exit` leaves. Without a terminal
//! (a script on stdin) lines are read plainly and not echoed.

use crate::command::{complete, Names};
use crate::session::{Console, Flow};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use std::io::IsTerminal;

struct Complete(Names);

impl Completer for Complete {
    type Candidate = Pair;
    fn complete(&self, line: &str, pos: usize, _: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, words) = complete(line, pos, &self.0);
        Ok((
            start,
            words
                .into_iter()
                .map(|w| Pair {
                    display: w.clone(),
                    replacement: format!("{w} "),
                })
                .collect(),
        ))
    }
}
impl Hinter for Complete {
    type Hint = String;
}
impl Highlighter for Complete {}
impl Validator for Complete {}
impl Helper for Complete {}

fn history_file() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".sdnlab_history"))
}

/// Runs the prompt until `exit`, Ctrl-D or the end of the input.
pub fn run(console: &mut Console) -> Result<(), crate::ConsoleError> {
    // SIGINT while a command runs goes to the command (same process group);
    // the console only records it. signal-hook composes with tokio's own
    // handler, so `net up`'s Ctrl-C handling elsewhere is unchanged.
    signal_hook::flag::register(signal_hook::consts::SIGINT, console.interrupted.clone())
        .map_err(crate::ConsoleError::io("cannot watch Ctrl-C"))?;
    let terminal = std::io::stdin().is_terminal();
    let config = rustyline::Config::builder()
        .auto_add_history(true)
        .max_history_size(1000)?
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut ed: Editor<Complete, rustyline::history::DefaultHistory> = Editor::with_config(config)?;
    ed.set_helper(Some(Complete(console.names())));
    let history = history_file().filter(|_| terminal);
    if let Some(h) = &history {
        let _ = ed.load_history(h);
    }
    let prompt = if terminal { "sdnlab> " } else { "" };
    'read: loop {
        // Lines typed while the last command ran (the terminal echoed
        // them) are read by the editor in order, one a prompt: what it
        // read past a line's end waits in its buffer (rustyline's
        // `buffer-redux`) for the next prompt. Without it, a line typed
        // just as Enter was read was lost (CI, 2026-11-29).
        match ed.readline(prompt) {
            // Several lines pasted at once (a terminal's bracketed paste
            // puts them in one buffer): each is a command, in order.
            Ok(text) => {
                for line in text.split(['\n', '\r']).filter(|l| !l.trim().is_empty()) {
                    if console.line(line) == Flow::Exit {
                        break 'read;
                    }
                }
            }
            Err(ReadlineError::Interrupted) => println!("Interrupt (exit or Ctrl-D leaves)"),
            Err(ReadlineError::Eof) => {
                if terminal {
                    println!();
                }
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(h) = &history {
        let _ = ed.save_history(h);
    }
    Ok(())
}
