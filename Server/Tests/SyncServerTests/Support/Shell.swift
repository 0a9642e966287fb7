import Foundation

/// A command that failed: its arguments, status and output.
struct CommandError: Error, CustomStringConvertible {
    let command: [String]
    let status: Int32
    let output: String
    var description: String { "\(command.joined(separator: " ")) exited \(status): \(output)" }
}

/// Runs a program to completion; returns its standard output and error, merged. Throws on a
/// non-zero exit unless `check` is false.
///
/// posix_spawn and waitpid rather than Foundation's `Process`: `pg_ctl start` leaves a server
/// running that inherits the descriptors Foundation watches to see its child end, so `Process`
/// would wait forever; the output goes to a file for the same reason.
@discardableResult
func runCommand(_ arguments: [String], check: Bool = true) throws -> String {
    let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("cmd-\(UUID().uuidString)").path
    defer { unlink(outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let argv = (["/usr/bin/env"] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, environ)
    guard spawned == 0 else { throw CommandError(command: arguments, status: spawned, output: "posix_spawn failed") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    if check, exitStatus != 0 {
        throw CommandError(command: arguments, status: exitStatus, output: text)
    }
    return text
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
