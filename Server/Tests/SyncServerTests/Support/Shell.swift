import Foundation

/// A command that failed, or that did not end in time: its arguments, status and output.
struct CommandError: Error, CustomStringConvertible {
    let command: [String]
    let status: Int32
    let output: String
    var description: String { "\(command.joined(separator: " ")) exited \(status): \(output)" }
}

/// A wait that gave up: what it was waiting for, and for how long.
struct WaitTimeout: Error, CustomStringConvertible {
    let waitingFor: String
    let limit: Duration
    var description: String { "gave up after \(limit) waiting for \(waitingFor)" }
}

/// Runs a program to completion in `directory` and returns its standard output; standard error is
/// kept apart (a warning on it never lands in parsed rows) and reported when the program fails.
/// Throws on a non-zero exit unless `check` is false, and, whatever `check` says, when the program
/// has not ended within `timeLimit` (it is killed then; the error says what was waited for).
///
/// The directory matters when the program runs as another user (the PostgreSQL programs as
/// `postgres`): some of them change back to their working directory and complain on standard error
/// when that user cannot enter it, as with a checkout in a 0700 directory. The default, `/`, can be
/// entered by everyone.
///
/// posix_spawn and waitpid rather than Foundation's `Process`: `pg_ctl start` leaves a server
/// running that inherits the descriptors Foundation watches to see its child end, so `Process`
/// would wait forever; the output goes to files for the same reason. The program starts through
/// `/bin/sh -c 'cd DIR && exec ...'`: Swift's Glibc does not import `posix_spawn_file_actions_addchdir_np`.
@discardableResult
func runCommand(_ arguments: [String], in directory: String = "/", check: Bool = true,
                timeLimit: Duration = .seconds(120)) throws -> String {
    let outputBase = FileManager.default.temporaryDirectory.appendingPathComponent("cmd-\(UUID().uuidString)").path
    let (outputPath, errorPath) = (outputBase + ".out", outputBase + ".err")
    defer { unlink(outputPath); unlink(errorPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let shell = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory] + arguments
    let argv = shell.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ)
    guard spawned == 0 else { throw CommandError(command: arguments, status: spawned, output: "posix_spawn failed") }
    let ended = waitForExit(pid, timeLimit: timeLimit)
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    let both = [output, errors].filter { !$0.isEmpty }.joined(separator: "\n[stderr] ")
    guard let status = ended else {
        let timeout = WaitTimeout(waitingFor: "`\(arguments.joined(separator: " "))` to exit (killed)", limit: timeLimit)
        throw CommandError(command: arguments, status: -1, output: "\(timeout); output so far: \(both)")
    }
    if check, status != 0 {
        throw CommandError(command: arguments, status: status, output: both)
    }
    return output
}

/// Waits for child `pid` to exit, up to `timeLimit`; returns its exit status (128 + signal when a
/// signal ended it), or nil after killing it (SIGKILL) when the time ran out.
func waitForExit(_ pid: pid_t, timeLimit: Duration) -> Int32? {
    let deadline = ContinuousClock.now + timeLimit
    var status: Int32 = 0
    while true {
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid { break }
        if result == -1 && errno != EINTR { return -1 }
        if ContinuousClock.now >= deadline {
            kill(pid, SIGKILL)
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            return nil
        }
        usleep(10_000)
    }
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
}

/// Polls `condition` every `interval` until it holds; throws ``WaitTimeout`` naming `what` when it
/// still does not after `timeLimit`.
func waitUntil(_ what: String, timeLimit: Duration = .seconds(60), interval: Duration = .milliseconds(5),
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeLimit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimeout(waitingFor: what, limit: timeLimit) }
        try await Task.sleep(for: interval)
    }
}

/// A free TCP port on loopback (bound, read, released).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw CommandError(command: ["socket"], status: errno, output: "socket failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
            guard bind(fd, pointer, length) == 0 else { return -1 }
            return getsockname(fd, pointer, &length)
        }
    }
    guard bound == 0 else { throw CommandError(command: ["bind"], status: errno, output: "bind failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A base directory for the tests' temporary files: `$SYNC_TEST_TMPDIR` (CI points it at a
/// directory it cleans up, with any cluster left running) or the system's.
func testTemporaryBase() -> URL {
    if let base = ProcessInfo.processInfo.environment["SYNC_TEST_TMPDIR"], !base.isEmpty {
        return URL(fileURLWithPath: base)
    }
    return FileManager.default.temporaryDirectory
}

/// A new empty directory under ``testTemporaryBase()``.
func makeTemporaryDirectory(_ prefix: String) throws -> URL {
    let url = testTemporaryBase().appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The executable `name` built in the same products directory as the running test binary.
func builtExecutable(named name: String) -> URL? {
    var candidates: [URL] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
    }
    if let main = Bundle.main.executableURL { candidates.append(main.deletingLastPathComponent()) }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
    for directory in candidates {
        var current = directory
        for _ in 0..<4 {
            let candidate = current.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            current = current.deletingLastPathComponent()
        }
    }
    return nil
}
