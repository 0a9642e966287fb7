import Foundation
import Testing
import ReadingEvents
@testable import EventStoreLMDB

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under the temporary directory, removed by `remove()`.
struct TempDirectory {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("store-tests-\(UUID().uuidString)")
    }

    /// A subdirectory URL (not created).
    func child(_ name: String) -> URL { url.appendingPathComponent(name) }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Runs `body` with a fresh temp directory and removes it afterwards.
func withTempDirectory<R>(_ body: (TempDirectory) throws -> R) rethrows -> R {
    let directory = TempDirectory()
    defer { directory.remove() }
    return try body(directory)
}

/// Async variant of ``withTempDirectory(_:)``.
func withTempDirectory<R>(_ body: (TempDirectory) async throws -> R) async rethrows -> R {
    let directory = TempDirectory()
    defer { directory.remove() }
    return try await body(directory)
}

/// The same derivation as the helper's, so the parent knows the IDs a child appended.
func deterministicID(prefix: String, index: Int) -> UUID {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in prefix.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    var bytes = [UInt8](repeating: 0, count: 16)
    for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: hash >> (8 * UInt64(i))) }
    for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: UInt64(index) >> (8 * UInt64(i))) }
    return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                       bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
}

/// `count` events with payloads drawn from `rng`.
func randomEvents(_ count: Int, using rng: inout SplitMix64, maxPayload: Int = 64) -> [NewEvent] {
    (0..<count).map { _ in
        let size = Int.random(in: 0...maxPayload, using: &rng)
        return NewEvent(payload: (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }
}

/// Every file of a directory with its bytes (for "modified nothing" checks).
func snapshot(of directory: URL) throws -> [String: Data] {
    var result: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
        result[name] = try Data(contentsOf: directory.appendingPathComponent(name))
    }
    return result
}

/// The permission bits of a file.
func permissions(of url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// The `store-test-helper` executable, built beside the test bundle.
func helperExecutable() throws -> URL {
    var candidates: [URL] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
    }
    if let main = Bundle.main.executableURL { candidates.append(main.deletingLastPathComponent()) }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
    for directory in candidates {
        // The test binary may live inside an .xctest bundle: look up a few levels.
        var current = directory
        for _ in 0..<4 {
            let candidate = current.appendingPathComponent("store-test-helper")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            current = current.deletingLastPathComponent()
        }
    }
    throw HelperError.notFound(candidates.map(\.path))
}

enum HelperError: Error {
    case notFound([String])
}

/// A running helper process whose stdout lines are collected as they arrive.
final class HelperProcess: @unchecked Sendable {
    // @unchecked Sendable: `lines` and `buffer` are only touched under `lock`; `process` is
    // started once in init and then only queried.
    let process = Process()
    private let pipe = Pipe()
    private let lock = NSLock()
    private var buffer = Data()
    private var collected: [String] = []

    init(_ arguments: [String]) throws {
        process.executableURL = try helperExecutable()
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            self?.take(data)
        }
        try process.run()
    }

    private func take(_ data: Data) {
        lock.lock()
        defer { lock.unlock() }
        buffer.append(data)
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            collected.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
            buffer.removeSubrange(buffer.startIndex...newline)
        }
    }

    /// The complete lines read so far.
    var lines: [String] {
        lock.lock()
        defer { lock.unlock() }
        return collected
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits for exit, then drains what is left in the pipe; returns the exit status.
    @discardableResult
    func waitForExit() -> Int32 {
        process.waitUntilExit()
        pipe.fileHandleForReading.readabilityHandler = nil
        take(pipe.fileHandleForReading.readDataToEndOfFile())
        return process.terminationStatus
    }

    /// Waits until a line satisfies `predicate` or `timeout` passes.
    func waitForLine(timeout: Duration, _ predicate: (String) -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if lines.contains(where: predicate) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return lines.contains(where: predicate)
    }

    func kill9() { _ = kill(process.processIdentifier, SIGKILL) }
}
