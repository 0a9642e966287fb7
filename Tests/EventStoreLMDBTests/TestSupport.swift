import Foundation
import Testing
import ReadingEvents
import TestSupport
@testable import EventStoreLMDB

#if canImport(Glibc)
import Glibc
#endif

extension TempDirectory {
    /// A fresh store-test directory path (not created: opening a store creates it).
    init() { self.init(prefix: "store-tests") }
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

/// `count` events with payloads drawn from `rng`.
func randomEvents(_ count: Int, using rng: inout SplitMix64, maxPayload: Int = 64) -> [NewEvent] {
    (0..<count).map { _ in
        let size = Int.random(in: 0...maxPayload, using: &rng)
        return NewEvent(payload: (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }
}

/// The permission bits of a file.
func permissions(of url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// The `store-test-helper` executable, built beside the test bundle.
func helperExecutable() throws -> URL {
    let found = builtExecutable(named: "store-test-helper")
    guard let url = found.url else { throw HelperError.notFound(found.searched) }
    return url
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

    /// Blocks this thread until `count` lines satisfy `predicate`, a line satisfies `stop` (the
    /// child finished or failed), or `timeout` passes, then waits `then` more and kills the child
    /// with SIGKILL. Synchronous on purpose: a task sleeping on the cooperative pool can wake
    /// hundreds of milliseconds late while other tests hold its threads, and the child runs on.
    /// Returns whether the `count` lines came.
    @discardableResult
    func kill9(afterLines count: Int, timeout: Duration, then delay: Duration, stop: (String) -> Bool = { _ in false },
               _ predicate: (String) -> Bool) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var came = false
        while clock.now < deadline {
            let seen = lines
            if seen.count(where: predicate) >= count { came = true; break }
            if seen.contains(where: stop) { break }
            usleep(500)
        }
        let until = clock.now + delay
        while clock.now < until { usleep(200) }
        kill9()
        return came
    }

    func kill9() { _ = kill(process.processIdentifier, SIGKILL) }
}
