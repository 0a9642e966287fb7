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
@discardableResult
func runCommand(_ arguments: [String], check: Bool = true) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    if check, process.terminationStatus != 0 {
        throw CommandError(command: arguments, status: process.terminationStatus, output: text)
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
