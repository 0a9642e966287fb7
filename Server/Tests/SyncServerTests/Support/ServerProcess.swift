import Foundation
import Testing

/// The real `reading-sync-server` executable, spawned on a free port (it prints the port it bound).
///
/// `@unchecked Sendable`: the constants are set in `init`; `Process` is only signalled and waited on.
final class ServerProcess: @unchecked Sendable {
    let process: Process
    let port: Int
    let logFile: URL
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts the server on `databaseURL` and waits (up to 60 s) for its "listening on" line;
    /// `openFileLimit`: the server runs with this many open files at most (`ulimit -n`);
    /// `environment`: variables added to this process's environment (the tests' hooks, such as
    /// `SYNC_TEST_PULL_PAUSE_MS`).
    static func start(databaseURL: String, arguments: [String] = [], openFileLimit: Int? = nil,
                      environment: [String: String] = [:]) throws -> ServerProcess {
        guard let executable = builtExecutable(named: "reading-sync-server") else {
            throw CommandError(command: ["reading-sync-server"], status: -1, output: "not built beside the tests")
        }
        let directory = try makeTemporaryDirectory("server")
        let logFile = directory.appendingPathComponent("stderr.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let process = Process()
        let serverArguments = ["--database-url", databaseURL, "--port", "0", "--log-level", "warning",
                               "--exit-when-stdin-closes"] + arguments
        if let openFileLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(openFileLimit) && exec \"$0\" \"$@\"", executable.path] + serverArguments
        } else {
            process.executableURL = executable
            process.arguments = serverArguments
        }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        // Its own directory, not the checkout's (which may sit in a directory others cannot enter).
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: logFile)
        // A pipe the server watches: when this test process dies, the pipe closes and the server exits.
        let input = Pipe()
        process.standardInput = input
        try process.run()
        // Read stdout on a thread until the line appears (or EOF: the server exited).
        let descriptor = output.fileHandleForReading.fileDescriptor
        let found = DispatchSemaphore(value: 0)
        let box = PortBox()
        Thread.detachNewThread {
            var text = ""
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                // read(2) directly: FileHandle.availableData traps on EINTR.
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                text += String(decoding: buffer[..<count], as: UTF8.self)
                if box.port == nil, let range = text.range(of: "listening on 127.0.0.1:"),
                   let line = text[range.upperBound...].split(separator: "\n").first, let port = Int(line) {
                    box.port = port
                    found.signal()
                }
            }
            found.signal()
        }
        _ = found.wait(timeout: .now() + 60)
        guard let port = box.port else {
            let waited = process.isRunning ? "no \"listening on\" line on stdout within 60 s" : "exited before its \"listening on\" line"
            let status = end(process, signal: SIGTERM) ?? -1
            let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            throw CommandError(command: ["reading-sync-server"], status: status, output: "\(waited); stderr: \(log)")
        }
        return ServerProcess(process: process, port: port, logFile: logFile, input: input)
    }

    /// Held open for the server's life (its end of file tells the server to exit).
    private let input: Pipe

    private init(process: Process, port: Int, logFile: URL, input: Pipe) {
        self.input = input
        self.process = process
        self.port = port
        self.logFile = logFile
    }

    /// SIGKILL: the process dies at once, mid-request.
    func kill() {
        if end(process, signal: SIGKILL) == nil {
            Issue.record("the server (pid \(process.processIdentifier)) had not exited 30 s after SIGKILL")
        }
    }

    /// SIGTERM and wait (up to 30 s): graceful shutdown. A server still running then is killed, and
    /// the test fails saying so.
    func stop() {
        if end(process, signal: SIGTERM) == nil {
            Issue.record("the server (pid \(process.processIdentifier)) had not exited 30 s after SIGTERM; sent SIGKILL")
            _ = end(process, signal: SIGKILL)
        }
    }

    /// What the server wrote to standard error.
    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    deinit { if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) } }
}

/// Sends `signal` to `process` when it runs and waits up to `timeLimit` for it to exit; returns its
/// termination status, or nil when it still runs then.
private func end(_ process: Process, signal: Int32, timeLimit: Duration = .seconds(30)) -> Int32? {
    if process.isRunning { kill(process.processIdentifier, signal) }
    let deadline = ContinuousClock.now + timeLimit
    while process.isRunning {
        if ContinuousClock.now >= deadline { return nil }
        usleep(10_000)
    }
    process.waitUntilExit()
    return process.terminationStatus
}

/// The port found by the reader thread. `@unchecked Sendable`: guarded by a lock.
private final class PortBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int?
    var port: Int? {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
