import Foundation
import TestSupport
import Testing

/// The outcome of one run of the `replay` binary.
struct ReplayRun: CustomStringConvertible {
    let arguments: [String]
    let status: Int32
    let stdoutData: Data
    let stderr: String

    var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    /// The non-empty lines of stderr.
    var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    /// The parsed stdout JSON.
    func json() throws -> Any { try JSONSerialization.jsonObject(with: stdoutData) }
    func jsonObject() throws -> [String: Any] { try #require(try json() as? [String: Any], "stdout is not a JSON object: \(stdout.prefix(300))") }

    var description: String {
        "replay \(arguments.joined(separator: " ")) → \(status)\nstderr: \(stderr)\nstdout (start): \(stdout.prefix(600))"
    }
}

/// A fresh temporary directory per test (created at once), removed by `remove()`.
typealias CLITempDirectory = TempDirectory

extension TempDirectory {
    /// A fresh, created directory for one CLI test.
    init() throws { self = try .created(prefix: "replay-cli") }
}

enum ReplayBinaryError: Error, CustomStringConvertible {
    case notFound([String])
    var description: String {
        switch self { case .notFound(let dirs): return "the replay binary was not found beside the tests in \(dirs)" }
    }
}

/// The `replay` executable, built in the same products directory as the test bundle (the test
/// target depends on it).
let replayExecutable: Result<URL, ReplayBinaryError> = {
    let found = builtExecutable(named: "replay")
    guard let url = found.url else { return .failure(.notFound(found.searched)) }
    return .success(url)
}()

/// Runs the built `replay` with `arguments`; stdout and stderr go to files (no pipe can fill up),
/// `READING_STORE` is removed from the environment unless `environment` sets it. A death by signal
/// is recorded as an issue.
func replay(_ arguments: [String], environment: [String: String] = [:], currentDirectory: URL? = nil,
            stdin: Data? = nil) throws -> ReplayRun {
    let raw = try replayRaw(arguments, environment: environment, currentDirectory: currentDirectory, stdin: stdin)
    if raw.died {
        Issue.record("replay \(arguments) was killed by signal \(raw.status)")
    }
    return ReplayRun(arguments: arguments, status: raw.status, stdoutData: raw.stdout, stderr: raw.stderr)
}

/// How one run of `replay` ended, deaths by signal included.
struct RawReplayRun {
    let reason: Process.TerminationReason
    let status: Int32
    let stdout: Data
    let stderr: String
    var died: Bool { reason == .uncaughtSignal }
}

/// Runs the built `replay` and reports how it ended, without judging it (the damage tests
/// classify and count outcomes, deaths by signal included).
func replayRaw(_ arguments: [String], environment: [String: String] = [:], currentDirectory: URL? = nil,
               stdin: Data? = nil) throws -> RawReplayRun {
    let executable = try replayExecutable.get()
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("replay-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outURL = scratch.appendingPathComponent("stdout"), errURL = scratch.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
    defer { try? out.close(); try? err.close() }

    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env.removeValue(forKey: "READING_STORE")
    env.merge(environment) { _, new in new }
    process.environment = env
    if let currentDirectory { process.currentDirectoryURL = currentDirectory }
    process.standardOutput = out
    process.standardError = err
    if let stdin {
        let inURL = scratch.appendingPathComponent("stdin")
        try stdin.write(to: inURL)
        process.standardInput = try FileHandle(forReadingFrom: inURL)
    } else {
        process.standardInput = FileHandle.nullDevice
    }
    try process.run()
    process.waitUntilExit()
    return RawReplayRun(reason: process.terminationReason, status: process.terminationStatus,
                        stdout: try Data(contentsOf: outURL),
                        stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
}

/// Runs `replay` and requires exit status 0.
@discardableResult
func replayOK(_ arguments: [String], environment: [String: String] = [:], currentDirectory: URL? = nil,
              sourceLocation: SourceLocation = #_sourceLocation) throws -> ReplayRun {
    let run = try replay(arguments, environment: environment, currentDirectory: currentDirectory)
    try #require(run.status == 0, "\(run)", sourceLocation: sourceLocation)
    return run
}

/// The small demo store the tests use: 2 readers, 40 days.
let demoArguments = ["--readers", "2", "--days", "40"]

/// Writes the small demo into `store` (quietly) and returns its last position.
@discardableResult
func makeDemoStore(at store: String, extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
    try replayOK(["demo", "--store", store, "--quiet"] + demoArguments + extra, sourceLocation: sourceLocation)
    return try lastPosition(of: store, sourceLocation: sourceLocation)
}

/// `stats --json` of a store.
func stats(of store: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    try replayOK(["stats", "--store", store, "--json"], sourceLocation: sourceLocation).jsonObject()
}

func lastPosition(of store: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
    try #require(try stats(of: store, sourceLocation: sourceLocation)["lastPosition"] as? Int, sourceLocation: sourceLocation)
}

/// `verify --json` of a store (exit status 0 required).
func verifyReport(of store: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    try replayOK(["verify", "--store", store, "--json"], sourceLocation: sourceLocation).jsonObject()
}

/// The JSON objects of a JSON Lines text.
func jsonLines(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
    try text.split(separator: "\n", omittingEmptySubsequences: true).map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                     "not a JSON object: \(line)", sourceLocation: sourceLocation)
    }
}

/// Parses the export format's instant (`2025-01-03T14:50:00.000000Z`).
func instant(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}

/// ``replay(_:environment:currentDirectory:stdin:)`` on a thread of its own: the test awaits the
/// child without holding one of the concurrency pool's few threads (on 2 cores, two blocked
/// threads stall every async test running beside it).
func replayAsync(_ arguments: [String], environment: [String: String] = [:]) async throws -> ReplayRun {
    let raw = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<RawReplayRun, Error>) in
        Thread.detachNewThread { continuation.resume(with: Result { try replayRaw(arguments, environment: environment) }) }
    }
    if raw.died { Issue.record("replay \(arguments) was killed by signal \(raw.status)") }
    return ReplayRun(arguments: arguments, status: raw.status, stdoutData: raw.stdout, stderr: raw.stderr)
}

/// ``replayAsync(_:environment:)`` requiring exit status 0.
@discardableResult
func replayOKAsync(_ arguments: [String], environment: [String: String] = [:],
                   sourceLocation: SourceLocation = #_sourceLocation) async throws -> ReplayRun {
    let run = try await replayAsync(arguments, environment: environment)
    try #require(run.status == 0, "\(run)", sourceLocation: sourceLocation)
    return run
}
