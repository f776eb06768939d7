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
        // them): each is a command, in order, before the editor starts.
        // rustyline would read them all into a buffer of its own and keep
        // only the first.
        while let Some(next) = terminal.then(typed_ahead) {
            match next {
                TypedAhead::Line(line) => {
                    println!("{prompt}{line}");
                    let _ = ed.add_history_entry(line.as_str());
                    if console.line(&line) == Flow::Exit {
                        break 'read;
                    }
                }
                TypedAhead::Eof => {
                    println!();
                    break 'read;
                }
                TypedAhead::None => break,
            }
        }
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

/// What waits on the terminal before the prompt shows.
enum TypedAhead {
    /// A whole line, typed (and echoed) while a command ran.
    Line(String),
    /// Ctrl-D typed at the start of a line.
    Eof,
    None,
}

/// One line already typed on the terminal, if a whole one waits: the
/// terminal is in canonical mode between prompts, so the kernel reports
/// input only once a line is complete and a read returns one line. A
/// partial line is left to the editor, which shows it for editing.
fn typed_ahead() -> TypedAhead {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    if !matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0) {
        return TypedAhead::None;
    }
    let mut buf = [0u8; 4096];
    // A read of the raw descriptor: std's buffered stdin would keep what
    // follows the line from the editor.
    match nix::unistd::read(libc::STDIN_FILENO, &mut buf) {
        Ok(0) => TypedAhead::Eof,
        Ok(n) => {
            let line = String::from_utf8_lossy(&buf[..n])
                .trim_end_matches(['\n', '\r'])
                .to_string();
            if line.trim().is_empty() {
                // An empty line: nothing to run; look again.
                typed_ahead()
            } else {
                TypedAhead::Line(line)
            }
        }
        Err(_) => TypedAhead::None,
    }
}
