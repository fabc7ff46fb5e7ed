//! A running adapter: the child process, its pipes, and the bookkeeping that turns every
//! way it can misbehave into a bounded, named error.
//!
//! # Shape
//!
//! [`ExternalArm::spawn`] starts the program and waits (bounded) for its handshake. Then
//! one supervisor task owns the child: it registers each id handed to
//! [`ExternalArm::send`] with its send instant, forwards it to a writer task (so a stuck
//! stdin pipe can never stall the deadline checks), reads stdout line by line, and
//! publishes answers, stamped with the instant their line arrived, on a channel that
//! [`ExternalArm::recv`] reads. A third task keeps the tail of stderr. `send` is a
//! non-blocking call on `&self`, so a driver loop can `select!` between its schedule and
//! `recv` without the adapter ever pacing herd.
//!
//! # Bounded waits
//!
//! - the handshake must come within [`ArmCommand::with_handshake_timeout`] (10 s);
//! - every request must be answered within [`ArmCommand::with_answer_deadline`] of its send;
//! - once stdin is closed and nothing is pending, `{"done":true}` and a clean exit must come
//!   within [`ArmCommand::with_finish_timeout`].
//!
//! Whatever fails first ends the arm: the child is killed and the error (client name,
//! stderr tail) is the last thing `recv` yields.
//!
//! # Stopping, and leaving nothing behind
//!
//! The adapter runs in a process group of its own. That keeps a terminal's Ctrl-C (sent to
//! the foreground group) away from it, so herd alone decides how it ends, and lets herd
//! signal everything the adapter may have started. [`ExternalArm::stop`] (herd was told to
//! stop) sends SIGTERM to the group, gives it [`STOP_GRACE`] to exit, then SIGKILLs the
//! group. Dropping the arm, or the supervisor dying with herd's runtime, SIGKILLs the group.
//! If herd itself is SIGKILLed none of that runs: the adapter's stdin then reaches EOF and
//! its parent changes, and the Node adapter exits on the latter (`crates/adapters/kits/node/arm.mjs`).

use super::command::ArmCommand;
use super::error::ExternalError;
use super::protocol::{self, Answer, Handshake, Line, LineError};
use super::tail::Tail;
use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, timeout, Instant};

/// An answer and the instant its line was read (latency runs from the intended send time
/// to this).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered {
    /// What the adapter said.
    pub answer: Answer,
    /// When herd read it.
    pub at: Instant,
}

enum Cmd {
    Send(u64, String),
    Close,
    Stop,
}

enum Event {
    Answer(Answered),
    Failed(ExternalError),
    Done,
}

/// A running external arm. Dropping it kills the adapter.
#[derive(Debug)]
pub struct ExternalArm {
    client: String,
    handshake: Handshake,
    cmds: mpsc::UnboundedSender<Cmd>,
    events: mpsc::UnboundedReceiver<Event>,
    /// Set by `close`: no more sends.
    closed: bool,
    /// Set once `recv` has yielded the end (done or an error).
    ended: bool,
    /// Bound for `finish` as a whole.
    finish_bound: Duration,
    tail: Tail,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cmd::Send(id, _) => write!(f, "Send({id})"),
            Cmd::Close => f.write_str("Close"),
            Cmd::Stop => f.write_str("Stop"),
        }
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Answer(a) => write!(f, "Answer({})", a.answer.id),
            Event::Failed(e) => write!(f, "Failed({e})"),
            Event::Done => f.write_str("Done"),
        }
    }
}

impl ExternalArm {
    /// Starts the adapter and waits for its handshake.
    pub async fn spawn(cmd: ArmCommand) -> Result<ExternalArm, ExternalError> {
        let client = cmd.client.clone();
        let mut command = Command::new(&cmd.program);
        command
            .args(&cmd.args)
            .envs(cmd.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group: see the module docs.
        #[cfg(unix)]
        command.process_group(0);
        if let Some(dir) = &cmd.cwd {
            command.current_dir(dir);
        }
        let mut child = command.spawn().map_err(|error| ExternalError::Spawn {
            client: client.clone(),
            program: cmd.program.to_string_lossy().into_owned(),
            error,
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ExternalError::Io {
                client,
                doing: "opening the adapter's pipes",
                error: std::io::Error::other("a pipe was not created"),
            });
        };
        let tail = Tail::default();
        let stderr_task = tokio::spawn(keep_tail(stderr, tail.clone()));
        let mut sup = Supervisor {
            client: client.clone(),
            expect_client: cmd
                .handshake_client
                .clone()
                .unwrap_or_else(|| client.clone()),
            child,
            lines: BufReader::new(stdout).lines(),
            line_no: 0,
            tail: tail.clone(),
            stderr_task: Some(stderr_task),
            answer_deadline: cmd.answer_deadline,
            finish_timeout: cmd.finish_timeout,
            writer_task: None,
            writer: None,
            cmds_open: true,
            pending: HashMap::new(),
            order: VecDeque::new(),
            idle_since: None,
        };
        let handshake = sup.handshake(cmd.handshake_timeout).await?;
        let (cmds, cmd_rx) = mpsc::unbounded_channel();
        let (event_tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(sup.run(stdin, cmd_rx, event_tx));
        Ok(ExternalArm {
            client,
            handshake,
            cmds,
            events,
            closed: false,
            ended: false,
            finish_bound: cmd.answer_deadline + cmd.finish_timeout * 2,
            tail,
            task,
        })
    }

    /// The client this arm runs.
    pub fn client(&self) -> &str {
        &self.client
    }

    /// The library's configuration as the adapter reported it.
    pub fn policy(&self) -> &str {
        &self.handshake.policy
    }

    /// The handshake line, parsed.
    pub fn handshake(&self) -> &Handshake {
        &self.handshake
    }

    /// Tells the adapter that logical request `id` is due now. Never blocks; the deadline
    /// for its answer starts now.
    pub fn send(&self, id: u64) -> Result<(), ExternalError> {
        self.send_request(id, None, None)
    }

    /// [`ExternalArm::send`], with the request's method and path when a trace gives them
    /// (the request line's optional `method` and `path`).
    pub fn send_request(
        &self,
        id: u64,
        method: Option<&str>,
        path: Option<&str>,
    ) -> Result<(), ExternalError> {
        if self.closed {
            return Err(self.stopped());
        }
        let line = protocol::request_line(id, method, path);
        self.cmds
            .send(Cmd::Send(id, line))
            .map_err(|_| self.stopped())
    }

    /// Closes the adapter's stdin: no more requests. Outstanding ones are still answered.
    pub fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            let _ = self.cmds.send(Cmd::Close);
        }
    }

    /// The next answer; `None` once the adapter has said `done` and exited cleanly. An
    /// error ends the arm: after it, `recv` yields `None`.
    pub async fn recv(&mut self) -> Option<Result<Answered, ExternalError>> {
        if self.ended {
            return None;
        }
        match self.events.recv().await {
            Some(Event::Answer(a)) => Some(Ok(a)),
            Some(Event::Failed(e)) => {
                self.ended = true;
                Some(Err(e))
            }
            Some(Event::Done) => {
                self.ended = true;
                None
            }
            None => {
                self.ended = true;
                Some(Err(self.stopped()))
            }
        }
    }

    /// Closes stdin, collects the remaining answers and waits for a clean exit, all within
    /// a bound (answer deadline + twice the finish timeout).
    pub async fn finish(mut self) -> Result<Vec<Answered>, ExternalError> {
        let mut rest = Vec::new();
        self.finish_into(&mut rest).await?;
        Ok(rest)
    }

    /// [`ExternalArm::finish`], pushing the answers onto `rest` as they come and keeping
    /// the arm, so a caller can race it against a stop and then [`ExternalArm::stop`] it.
    /// Cancel safe: `rest` holds every answer read before the cancel.
    pub async fn finish_into(&mut self, rest: &mut Vec<Answered>) -> Result<(), ExternalError> {
        self.close();
        let bound = self.finish_bound;
        let drain = async {
            while let Some(a) = self.recv().await {
                rest.push(a?);
            }
            Ok(())
        };
        match timeout(bound, drain).await {
            Ok(r) => r,
            Err(_) => Err(ExternalError::Finish {
                client: self.client.clone(),
                detail: format!("not finished within {} ms", bound.as_millis()),
                stderr: self.tail.text(),
            }),
        }
    }

    /// Ends the arm now because herd is stopping: no more sends, unanswered requests are
    /// dropped, and the adapter's process group gets SIGTERM, then SIGKILL if it has not
    /// exited within [`STOP_GRACE`]. Returns once the adapter is gone (bounded).
    pub async fn stop(mut self) {
        self.closed = true;
        if self.ended || self.cmds.send(Cmd::Stop).is_err() {
            return;
        }
        let end = async {
            while let Some(e) = self.events.recv().await {
                if matches!(e, Event::Done | Event::Failed(_)) {
                    break;
                }
            }
        };
        // Past this bound, dropping `self` aborts the supervisor, which SIGKILLs the group.
        let _ = timeout(STOP_GRACE + REAP * 2, end).await;
    }

    fn stopped(&self) -> ExternalError {
        ExternalError::Stopped {
            client: self.client.clone(),
        }
    }
}

impl Drop for ExternalArm {
    fn drop(&mut self) {
        // The supervisor owns the child: dropping it (aborted) kills the adapter's group.
        self.task.abort();
    }
}

/// Copies stderr into the tail until EOF.
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Tail) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tail.push(&buf[..n]);
    }
}

/// Writes request lines until the channel closes (then stdin closes) or the pipe breaks.
async fn write_requests(mut stdin: ChildStdin, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(line) = lines.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() {
            // The adapter is gone; the supervisor learns it from stdout.
            return;
        }
    }
}

/// Owns the child and its stdout; see the module docs.
struct Supervisor {
    client: String,
    /// The client the handshake must name.
    expect_client: String,
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    line_no: u64,
    tail: Tail,
    stderr_task: Option<JoinHandle<()>>,
    answer_deadline: Duration,
    finish_timeout: Duration,
    /// The stdin writer, once running; aborted (closing stdin) whenever the child is killed.
    writer_task: Option<JoinHandle<()>>,
    /// Request lines on their way to the writer; `None` before [`Supervisor::serve`] and once herd
    /// closed stdin (dropping it closes stdin after the queued lines are out).
    writer: Option<mpsc::UnboundedSender<String>>,
    /// Whether herd's commands can still arrive (false once [`ExternalArm`] is gone).
    cmds_open: bool,
    /// id -> send instant of every unanswered request.
    pending: HashMap<u64, Instant>,
    /// The same in send order, for the oldest deadline; answered entries are skipped lazily.
    order: VecDeque<(Instant, u64)>,
    /// When stdin was closed and nothing was pending: the `done` clock.
    idle_since: Option<Instant>,
}

/// How long to wait for the child's exit status and the rest of stderr after stdout ended.
const REAP: Duration = Duration::from_secs(2);

/// How long a stopped adapter has, after SIGTERM, before its group is SIGKILLed.
pub const STOP_GRACE: Duration = Duration::from_millis(500);

/// What a turn of the supervisor's loop decided.
enum Flow {
    /// Keep serving.
    Continue,
    /// The adapter said `done` with nothing outstanding: wait for its exit.
    Done,
}

/// The deadlines the loop waits on, next turn.
struct Due {
    /// The oldest unanswered request: (its answer deadline, its id).
    answer: Option<(Instant, u64)>,
    /// When the adapter must have said `done`, once stdin is closed and nothing is pending.
    done: Option<Instant>,
}

impl Supervisor {
    /// Reads and checks the first line.
    async fn handshake(&mut self, within: Duration) -> Result<Handshake, ExternalError> {
        let read = match timeout(within, self.lines.next_line()).await {
            Ok(r) => r,
            Err(_) => {
                let detail = format!("no handshake line within {} ms", within.as_millis());
                let stderr = self.kill_and_tail().await;
                return Err(ExternalError::Handshake {
                    client: self.client.clone(),
                    detail,
                    stderr,
                });
            }
        };
        let text = match read {
            Ok(Some(text)) => text,
            Ok(None) => {
                return Err(match self.exited("before its handshake").await {
                    // Exit status 2 before the handshake is the protocol's refusal of
                    // `--options` (or of the command line): bad input, not a crash.
                    ExternalError::Exited {
                        client,
                        status,
                        stderr,
                        ..
                    } if status == "exit status: 2" => {
                        ExternalError::OptionsRefused { client, stderr }
                    }
                    e => e,
                });
            }
            Err(e) => return Err(self.unreadable(e).await),
        };
        self.line_no += 1;
        let h = match protocol::parse_handshake(self.line_no, &text) {
            Ok(h) => h,
            Err(le) => return Err(self.malformed(le).await),
        };
        if h.client != self.expect_client {
            let detail = format!(
                "asked for client {}, adapter runs {}",
                self.expect_client, h.client
            );
            let stderr = self.kill_and_tail().await;
            return Err(ExternalError::Handshake {
                client: self.client.clone(),
                detail,
                stderr,
            });
        }
        Ok(h)
    }

    /// The main loop; ends by publishing `Done` or one `Failed`.
    async fn run(
        mut self,
        stdin: ChildStdin,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
        events: mpsc::UnboundedSender<Event>,
    ) {
        let end = match self.serve(stdin, &mut cmds, &events).await {
            Ok(()) => Event::Done,
            Err(e) => Event::Failed(e),
        };
        let _ = events.send(end);
    }

    /// Forwards herd's commands, reads answers and enforces the deadlines until the adapter
    /// has said `done` and exited, or something failed. Each branch is a method below.
    async fn serve(
        &mut self,
        stdin: ChildStdin,
        cmds: &mut mpsc::UnboundedReceiver<Cmd>,
        events: &mpsc::UnboundedSender<Event>,
    ) -> Result<(), ExternalError> {
        let (writer, ids) = mpsc::unbounded_channel();
        self.writer_task = Some(tokio::spawn(write_requests(stdin, ids)));
        self.writer = Some(writer);
        loop {
            let due = self.due();
            let far = Instant::now() + Duration::from_secs(86_400);
            let flow = tokio::select! {
                cmd = cmds.recv(), if self.cmds_open => self.on_command(cmd).await?,
                line = self.lines.next_line() => self.on_line(line, events).await?,
                () = sleep_until(due.answer.map_or(far, |(t, _)| t)), if due.answer.is_some() => {
                    return Err(self.no_answer(due.answer.map_or(0, |(_, id)| id)).await);
                },
                () = sleep_until(due.done.unwrap_or(far)), if due.done.is_some() => {
                    return Err(self.no_done().await);
                },
            };
            if let Flow::Done = flow {
                return self.exit_status().await;
            }
        }
    }

    /// The deadlines of the next turn (starting the `done` clock once stdin is closed and
    /// nothing is pending).
    fn due(&mut self) -> Due {
        while let Some(&(t, id)) = self.order.front() {
            if self.pending.get(&id) == Some(&t) {
                break;
            }
            self.order.pop_front();
        }
        if self.writer.is_none() && self.pending.is_empty() && self.idle_since.is_none() {
            self.idle_since = Some(Instant::now());
        }
        Due {
            answer: self
                .order
                .front()
                .map(|&(t, id)| (t + self.answer_deadline, id)),
            done: self.idle_since.map(|t| t + self.finish_timeout),
        }
    }

    /// A command from [`ExternalArm`]: send an id, close stdin, or stop.
    async fn on_command(&mut self, cmd: Option<Cmd>) -> Result<Flow, ExternalError> {
        match cmd {
            Some(Cmd::Send(id, line)) => {
                let now = Instant::now();
                if self.pending.insert(id, now).is_some() {
                    return Err(self.fail_finish(format!("id {id} sent twice")).await);
                }
                self.order.push_back((now, id));
                if let Some(w) = &self.writer {
                    let _ = w.send(line);
                }
            }
            Some(Cmd::Close) => self.writer = None,
            Some(Cmd::Stop) => {
                self.terminate().await;
                return Err(ExternalError::Stopped {
                    client: self.client.clone(),
                });
            }
            None => {
                self.cmds_open = false;
                self.writer = None;
            }
        }
        Ok(Flow::Continue)
    }

    /// A stdout line (or its end): an answer, `done`, or a protocol error.
    async fn on_line(
        &mut self,
        line: std::io::Result<Option<String>>,
        events: &mpsc::UnboundedSender<Event>,
    ) -> Result<Flow, ExternalError> {
        let text = match line {
            Ok(Some(text)) => text,
            Ok(None) => {
                let when = if self.pending.is_empty() {
                    "without saying done".to_string()
                } else {
                    format!("with {} requests unanswered", self.pending.len())
                };
                return Err(self.exited(&when).await);
            }
            Err(e) => return Err(self.unreadable(e).await),
        };
        self.line_no += 1;
        let at = Instant::now();
        match protocol::parse_line(self.line_no, &text) {
            Ok(Line::Answer(answer)) => {
                if self.pending.remove(&answer.id).is_none() {
                    let le = LineError {
                        line: self.line_no,
                        detail: format!(
                            "answer for id {}, which herd did not send or which was already answered",
                            answer.id
                        ),
                    };
                    return Err(self.malformed(le).await);
                }
                let _ = events.send(Event::Answer(Answered { answer, at }));
                Ok(Flow::Continue)
            }
            Ok(Line::Done) if self.writer.is_some() || !self.pending.is_empty() => {
                let le = LineError {
                    line: self.line_no,
                    detail: format!(
                        "done while {} requests are unanswered{}",
                        self.pending.len(),
                        if self.writer.is_some() {
                            " and before herd closed stdin"
                        } else {
                            ""
                        }
                    ),
                };
                Err(self.malformed(le).await)
            }
            Ok(Line::Done) => Ok(Flow::Done),
            Err(le) => Err(self.malformed(le).await),
        }
    }

    /// The oldest unanswered request, `id`, passed its deadline.
    async fn no_answer(&mut self, id: u64) -> ExternalError {
        let stderr = self.kill_and_tail().await;
        ExternalError::NoAnswer {
            client: self.client.clone(),
            id,
            waited: self.answer_deadline,
            stderr,
        }
    }

    /// stdin closed, everything answered, and no `done` in time.
    async fn no_done(&mut self) -> ExternalError {
        let detail = format!(
            "no {{\"done\":true}} within {} ms of the last answer",
            self.finish_timeout.as_millis()
        );
        self.fail_finish(detail).await
    }

    /// After `done`: the adapter must exit cleanly, in time.
    async fn exit_status(&mut self) -> Result<(), ExternalError> {
        match timeout(self.finish_timeout, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => {
                let stderr = self.tail_text().await;
                Err(ExternalError::Finish {
                    client: self.client.clone(),
                    detail: format!("said done, then exited with {status}"),
                    stderr,
                })
            }
            Ok(Err(e)) => Err(ExternalError::Io {
                client: self.client.clone(),
                doing: "waiting for the adapter to exit",
                error: e,
            }),
            Err(_) => {
                let detail = format!(
                    "said done but did not exit within {} ms",
                    self.finish_timeout.as_millis()
                );
                Err(self.fail_finish(detail).await)
            }
        }
    }

    /// Ends the adapter for a stop: closes its stdin, SIGTERMs its process group, waits
    /// [`STOP_GRACE`] for it to exit, then SIGKILLs the group and reaps it (bounded).
    async fn terminate(&mut self) {
        self.writer = None;
        if let Some(w) = self.writer_task.take() {
            w.abort();
        }
        signal_group(&self.child, Signal::Term);
        if timeout(STOP_GRACE, self.child.wait()).await.is_err() {
            self.kill();
            let _ = timeout(REAP, self.child.wait()).await;
        }
    }

    /// SIGKILLs the adapter's process group (and the adapter, wherever it is).
    fn kill(&mut self) {
        signal_group(&self.child, Signal::Kill);
        let _ = self.child.start_kill();
    }

    /// The stderr tail, after giving the stderr reader a moment to reach EOF.
    async fn tail_text(&mut self) -> String {
        if let Some(task) = self.stderr_task.take() {
            let _ = timeout(REAP, task).await;
        }
        self.tail.text()
    }

    /// Kills the child and returns the stderr tail.
    async fn kill_and_tail(&mut self) -> String {
        if let Some(w) = self.writer_task.take() {
            w.abort();
        }
        self.kill();
        let _ = timeout(REAP, self.child.wait()).await;
        self.tail_text().await
    }

    async fn malformed(&mut self, le: LineError) -> ExternalError {
        let stderr = self.kill_and_tail().await;
        ExternalError::Malformed {
            client: self.client.clone(),
            line: le.line,
            detail: le.detail,
            stderr,
        }
    }

    async fn fail_finish(&mut self, detail: String) -> ExternalError {
        let stderr = self.kill_and_tail().await;
        ExternalError::Finish {
            client: self.client.clone(),
            detail,
            stderr,
        }
    }

    /// stdout could not be read as text lines.
    async fn unreadable(&mut self, e: std::io::Error) -> ExternalError {
        let le = LineError {
            line: self.line_no + 1,
            detail: format!("unreadable output ({e})"),
        };
        self.malformed(le).await
    }

    /// stdout ended: reap the child (bounded) and say how it exited.
    async fn exited(&mut self, when: &str) -> ExternalError {
        let status = match timeout(REAP, self.child.wait()).await {
            Ok(Ok(s)) => s.to_string(),
            Ok(Err(e)) => format!("exit status unknown: {e}"),
            Err(_) => {
                self.kill();
                "stdout closed but still running; killed".to_string()
            }
        };
        let stderr = self.tail_text().await;
        ExternalError::Exited {
            client: self.client.clone(),
            status,
            when: when.to_string(),
            stderr,
        }
    }
}

impl Drop for Supervisor {
    /// Whatever way the supervisor goes (aborted with its arm, dropped mid-handshake by a
    /// stop, or with the runtime), the adapter's group goes with it. `kill_on_drop` alone
    /// would reach the adapter but not what it started.
    fn drop(&mut self) {
        signal_group(&self.child, Signal::Kill);
    }
}

/// The two signals herd sends an adapter's group.
#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Sends `sig` to the process group the child leads, unless the child has been reaped
/// (its id, and so the group id, may then belong to someone else).
#[cfg(unix)]
fn signal_group(child: &Child, sig: Signal) {
    use rustix::process::{kill_process_group, Pid, Signal as Sig};
    let Some(pid) = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw)
    else {
        return;
    };
    let sig = match sig {
        Signal::Term => Sig::TERM,
        Signal::Kill => Sig::KILL,
    };
    let _ = kill_process_group(pid, sig);
}

/// Without process groups, only the child itself is killed (by `kill_on_drop` and
/// `start_kill`); a stop kills it at once.
#[cfg(not(unix))]
fn signal_group(_child: &Child, _sig: Signal) {}
