import ArgumentParser
import Foundation

/// `--in-process` (hidden), for the commands that read a possibly damaged data file (`verify`,
/// `export`): without it, the command runs itself again as a worker (``runSelf(arguments:)``) and
/// reports the worker's death by a signal as damage, instead of dying of it.
struct WorkerOption: ParsableArguments {
    @Flag(help: .hidden) var inProcess = false

    /// In the parent: runs this command in a worker with `--in-process` and returns `false` when
    /// it ended with status 0 (the work is done); a worker's failure is this command's. In the
    /// worker: returns `true` (do the work here), after ``endWithParent()``.
    ///
    /// LMDB keeps no page checksums: on a damaged file its own code can assert or fault while
    /// walking the B-tree; in a worker, such a death is reported as damage of `store`.
    func isWorker(store: URL) throws -> Bool {
        if inProcess {
            endWithParent()
            return true
        }
        switch try runSelf(arguments: Array(CommandLine.arguments.dropFirst()) + ["--in-process"]) {
        case .exited(0): return false
        case .exited(let code): throw ExitCode(code)
        case .signalled(SIGPIPE):
            // The reader of our output went away (`| head`): not damage; end as a shell would.
            throw ExitCode(128 + SIGPIPE)
        case .signalled(let signal):
            throw ReplayError("the data file of \(store.path) is damaged: LMDB stopped with signal \(signal) while reading its pages (restore from a backup)")
        }
    }
}

/// How a child process ended.
enum ChildStatus {
    case exited(Int32)
    case signalled(Int32)
}

/// Runs this executable again with `arguments`, sharing stdin, stdout and stderr.
///
/// The child is a worker of this process: SIGINT, SIGTERM and SIGHUP that reach this process
/// (Foundation starts the child in its own process group, so a terminal's Ctrl-C reaches only
/// this one) are forwarded to it, and when it ends by one of them this process ends the same way.
/// The child learns this process's id from `REPLAY_PARENT_PID` and ends when it is gone (see
/// ``endWithParent()``), so a killed parent leaves no worker holding its output.
func runSelf(arguments: [String]) throws -> ChildStatus {
    let process = Process()
    let executable = executablePath()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    // A child that dies on a damaged file is reported in one line by the parent: the Swift
    // runtime's crash backtrace (dozens of lines) must not reach the user.
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    environment[parentPIDVariable] = String(getpid())
    process.environment = environment
    try process.run()
    // Installed once the worker's id is known: a signal before this point ends this process by
    // its default action, and the worker follows (endWithParent).
    //
    // A plain signal handler, not a DispatchSource: on Linux, libdispatch learns of a signal
    // through a signalfd, which sees only a signal that every thread blocks, and the main thread
    // of an async `main` waits in `sigsuspend` with no signal blocked. A signal delivered there
    // ran libdispatch's empty handler and never reached the source, now and then: this process
    // then waited for ever on a worker that waited for ever on a full output pipe.
    let forwarded: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    workerToSignal = process.processIdentifier
    for sig in forwarded { signal(sig, forwardToWorker) }
    process.waitUntilExit()
    for sig in forwarded { signal(sig, SIG_DFL) }
    workerToSignal = 0
    switch process.terminationReason {
    case .exit: return .exited(process.terminationStatus)
    case .uncaughtSignal:
        if forwarded.contains(process.terminationStatus) { endBy(signal: process.terminationStatus) }
        return .signalled(process.terminationStatus)
    @unknown default: return .exited(process.terminationStatus)
    }
}

/// The worker that ``forwardToWorker(_:)`` passes a signal on to; 0 when there is none.
///
/// `nonisolated(unsafe)`: written only by the thread in ``runSelf(arguments:)``, before the
/// handlers are installed and after they are removed, and read by the handler in between (an
/// aligned 32-bit load; a signal handler can take no lock).
nonisolated(unsafe) private var workerToSignal: pid_t = 0

/// The handler of SIGINT, SIGTERM and SIGHUP while a worker runs: sends the signal on to the
/// worker (`kill` is async-signal-safe), or, with no worker, ends this process by it.
private func forwardToWorker(_ sig: Int32) {
    let worker = workerToSignal
    if worker > 0 { kill(worker, sig) } else { endBy(signal: sig) }
}

/// Ends this process by `sig` (its default action restored), as a shell expects of a command
/// stopped by Ctrl-C or `kill`. Async-signal-safe (`signal`, `pthread_sigmask`, `raise`, `_exit`),
/// so the handler calls it too.
///
/// This code runs on a thread of the concurrency pool, and libdispatch blocks SIGINT, SIGTERM and
/// SIGHUP in those threads: `raise` alone left the signal pending there, and the command went on
/// to report the worker's end by the signal as a damaged data file. The signal is unblocked in
/// this thread first, so it is delivered before `pthread_sigmask` returns.
private func endBy(signal sig: Int32) -> Never {
    signal(sig, SIG_DFL)
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, sig)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    raise(sig)
    _exit(128 + sig)
}

/// The environment variable that tells a worker (``runSelf(arguments:)``) its parent's process id.
private let parentPIDVariable = "REPLAY_PARENT_PID"

/// In a worker started by ``runSelf(arguments:)``: ends this process at once when the parent is
/// gone (killed, or ended by a signal), so no worker keeps running or holds the parent's output.
///
/// A thread checks the parent's id every 100 ms (`getppid` changes when the parent dies); this works
/// on every platform, whereas Linux's `prctl(PR_SET_PDEATHSIG)` is a variadic C function Swift
/// cannot call.
func endWithParent() {
    guard let text = ProcessInfo.processInfo.environment[parentPIDVariable], let parent = pid_t(text) else { return }
    if getppid() != parent { _exit(1) }
    let watcher = Thread {
        while getppid() == parent { usleep(100_000) }
        _exit(1)
    }
    watcher.start()
}
