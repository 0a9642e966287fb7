import CSQLite
import Foundation
import ReadingEvents
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 36, "also found": a KOReader copy that a SIGKILL leaves behind, `demo --events` without bound, and raw `NSError`
/// dumps for a closed port.
@Suite(.serialized) struct ImportBoundsCLITests {
    static let reader = "5b0e7c2a-3f1d-4e8a-9c61-0d2b7a4f9e13"

    /// Starts the built `replay` with `arguments` (and `environment` added to this process's).
    func start(_ arguments: [String], environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = try replayExecutable.get()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// A KOReader statistics database of `stays` page stays over 100 books, made with SQLite.
    static func koreaderFile(at path: String, stays: Int) throws {
        var db: OpaquePointer?
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        let sql = """
            CREATE TABLE book (id integer PRIMARY KEY, title text, authors text, notes integer, last_open integer,
                highlights integer, pages integer, series text, language text, md5 text, total_read_time integer, total_read_pages integer);
            CREATE TABLE page_stat_data (id_book integer, page integer NOT NULL DEFAULT 0, start_time integer NOT NULL DEFAULT 0,
                duration integer NOT NULL DEFAULT 0, total_pages integer NOT NULL DEFAULT 0, UNIQUE (id_book, page, start_time));
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
                INSERT INTO book SELECT i, 'Book ' || i, 'Author', NULL, 0, 0, 400, NULL, NULL, printf('%032x', i), 0, 0 FROM n;
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(stays) - 1)
                INSERT INTO page_stat_data SELECT 1 + i % 100, 1 + (i / 100) % 400, 1600000000 + i * 60, 45, 400 FROM n;
            """
        try #require(sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK, "\(String(cString: sqlite3_errmsg(db)))")
    }

    /// `import-from koreader` copies the statistics file to the temporary directory; a SIGKILL
    /// while it read left the copy there for good. The copy is now unlinked as soon as SQLite has
    /// it open: killed while reading, the import leaves nothing in `TMPDIR`.
    @Test func aKilledKOReaderImportLeavesNoCopy() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let file = dir.path("statistics.sqlite3")
        try Self.koreaderFile(at: file, stays: 200_000)
        var rng = SplitMix64(seed: 3602)
        var killedWhileRunning = 0
        for trial in 0..<3 {
            let tmp = dir.child("tmp-\(trial)")
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
            let process = try start(["import-from", "koreader", file, "--reader", Self.reader, "--zone", "Asia/Seoul",
                                     "--store", dir.path("store-\(trial)")], environment: ["TMPDIR": tmp.path])
            try await Task.sleep(for: .microseconds(400_000 + Int(rng.next() % 400_000)))
            if process.isRunning { killedWhileRunning += 1 }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let left = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
            #expect(left.isEmpty, "trial \(trial): left in TMPDIR after SIGKILL: \(left)")
        }
        #expect(killedWhileRunning > 0, "every import ended before the kill: the file is too small to test this")
    }

    /// A copy left by a process killed in the moment between making it and opening it (its pid
    /// no longer runs) is removed by the next KOReader import; one of a running process is not.
    @Test func aCopyOfAnEndedProcessIsRemovedByTheNextImport() throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let file = dir.path("statistics.sqlite3")
        try Self.koreaderFile(at: file, stays: 50)
        let tmp = dir.child("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        // A pid that has ended: a child that ran and was reaped.
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let stale = tmp.appendingPathComponent("reading-import-\(ended.processIdentifier)-\(UUID().uuidString)")
        let live = tmp.appendingPathComponent("reading-import-\(getpid())-\(UUID().uuidString)")
        for copy in [stale, live] {
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            try Data("copy".utf8).write(to: copy.appendingPathComponent("statistics.sqlite3"))
        }
        let run = try replay(["import-from", "koreader", file, "--reader", Self.reader, "--zone", "Asia/Seoul",
                              "--store", dir.path("store")], environment: ["TMPDIR": tmp.path])
        #expect(run.status == 0, "\(run)")
        let left = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
        #expect(left == [live.lastPathComponent], "\(left)")
    }

    /// `demo --events 9223372036854775807` ran until killed: --events and --chunk are bounded,
    /// and a value past the bound is a usage error (exit 64) whose first line names the option
    /// and its limit, before any store is made.
    @Test(arguments: [("--events", "9223372036854775807", "--events must be at most 10000000, not 9223372036854775807"),
                      ("--events", "10000001", "--events must be at most 10000000, not 10000001"),
                      ("--chunk", "1000001", "--chunk must be at most 1000000, not 1000001")])
    func demoArgumentsAreBounded(option: String, value: String, message: String) async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let store = dir.path("store")
        let process = Process()
        process.executableURL = try replayExecutable.get()
        process.arguments = ["demo", "--store", store, "--quiet", option, value]
        let err = dir.child("stderr")
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let handle = try FileHandle(forWritingTo: err)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = handle
        try process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let ranOn = process.isRunning
        if ranOn { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try handle.close()
        let stderr = try String(contentsOf: err, encoding: .utf8)
        #expect(!ranOn, "demo \(option) \(value) was still running after 60 s")
        #expect(process.terminationStatus == 64, "\(stderr)")
        #expect(stderr.split(separator: "\n").first.map { $0.contains(message) } == true, "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    /// `sync --server` on a closed port printed a raw `NSError` dump; now one line names the
    /// cause and the place (connection refused at 127.0.0.1:1). The client waits out an outage
    /// of 5 minutes by default; `--max-outage 1` gives up after a second (issue 39), saying so.
    @Test func aClosedPortIsOneLineNamingTheCause() throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let store = dir.path("store")
        try replayOK(["demo", "--store", store, "--readers", "1", "--days", "3", "--quiet"])
        let run = try replay(["sync", "--server", "http://127.0.0.1:1", "--token", "\(Self.reader).secret", "--store", store,
                              "--max-outage", "1"])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        #expect(run.stderr.contains("connection refused at 127.0.0.1:1"), "\(run.stderr)")
        #expect(run.stderr.contains("gave up after"), "\(run.stderr)")
        for dump in ["Error Domain", "UserInfo", "NSError", "NSURLErrorDomain", "Code="] {
            #expect(!run.stderr.contains(dump), "\(run.stderr)")
        }
    }

    /// A new device's first `sync --server` creates its store in a new or empty directory (issue
    /// 38); when that sync fails before anything arrived (here nothing listens) the store is
    /// removed again (`--max-outage 1`: it gives up after a second): a new directory (and its new parent)
    /// stays absent, an empty one empty.
    /// Before, both said "no store at PATH" without reaching the server.
    @Test func aFailedFirstSyncLeavesANewOrEmptyDirectoryAsItWas() throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let missing = dir.path("new/device"), empty = dir.path("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        for store in [missing, empty] {
            let run = try replay(["sync", "--server", "http://127.0.0.1:1", "--token", "\(Self.reader).secret", "--store", store, "--max-outage", "1"])
            #expect(run.status == 1, "\(run)")
            #expect(run.stderrLines.count == 1, "\(run.stderr)")
            #expect(run.stderr.contains("connection refused at 127.0.0.1:1"), "\(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("new")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty)
    }
}
