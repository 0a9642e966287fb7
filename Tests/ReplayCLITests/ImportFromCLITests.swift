import Foundation
import ReadingEvents
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `replay import-from` through the built binary: the summary and report, re-import, the
/// machine's `TZ`, export/import round trips, bad input, and kills mid-import.
@Suite(.serialized) struct ImportFromCLITests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("ImportFixtures")
    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }
    static let reader = "5b0e7c2a-3f1d-4e8a-9c61-0d2b7a4f9e13"

    func importFrom(_ source: String, _ file: String, store: String, zone: String = "Asia/Seoul", extra: [String] = [],
                    environment: [String: String] = [:]) async throws -> ReplayRun {
        try await replayAsync(["import-from", source, file, "--reader", Self.reader, "--zone", zone, "--store", store] + extra,
                   environment: environment)
    }

    /// A newer export that moved a finish date: the store does not take the new finish, and the
    /// text output names the book by the title the store holds (the report lists no books there).
    @Test func aNewerExportsRefusedEventNamesItsBook() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let store = dir.path("store")
        let header = "Book Id,Title,Author,Exclusive Shelf,Date Read,Date Added\n"
        let older = dir.child("older.csv"), newer = dir.child("newer.csv")
        try (header + "1,Moved Finish,Author,read,2024/05/01,2024/04/01\n").write(to: older, atomically: true, encoding: .utf8)
        try (header + "1,Moved Finish,Author,read,2024/06/01,2024/04/01\n").write(to: newer, atomically: true, encoding: .utf8)
        #expect(try await importFrom("goodreads", older.path, store: store).status == 0)
        let again = try await importFrom("goodreads", newer.path, store: store)
        #expect(again.status == 0, "\(again)")
        #expect(again.stdout.contains("1 not fitting the stored history"), "\(again.stdout)")
        #expect(again.stdout.contains("not taken: BookFinished of Moved Finish: "), "\(again.stdout)")
    }

    @Test func importsWithAReportAndASummaryAndReImportAddsNothing() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let store = dir.path("store")
        let first = try await importFrom("goodreads", Self.fixture("goodreads-24.csv"), store: store)
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.contains("goodreads: 5 books"))
        #expect(first.stdoutLines.last?.hasPrefix("imported ") == true)
        #expect(first.stderr.isEmpty)   // no progress bar when stderr is not a terminal
        let last = try await lastPositionAsync(of: store)
        #expect(last > 0)
        let second = try await importFrom("goodreads", Self.fixture("goodreads-24.csv"), store: store, extra: ["--json"])
        #expect(second.status == 0, "\(second)")
        let report = try second.jsonObject()
        #expect(report["added"] as? Int == 0)
        #expect(report["alreadyStored"] as? Int == last)
        #expect((report["books"] as? [Any])?.count == 5)
        #expect((report["warnings"] as? [Any])?.isEmpty == false)
        #expect(try await lastPositionAsync(of: store) == last)
        _ = try await replayOKAsync(["verify", "--store", store, "--json"])
    }

    /// Issue 26: the same file under a corrected --zone is refused whole, naming the earlier zone.
    @Test func aReImportUnderAnotherZoneIsRefusedAndSaysWhichZoneToUse() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let store = dir.path("store")
        let first = try await importFrom("goodreads", Self.fixture("goodreads-24.csv"), store: store)
        #expect(first.status == 0, "\(first)")
        let last = try await lastPositionAsync(of: store)
        let other = try await importFrom("goodreads", Self.fixture("goodreads-24.csv"), store: store, zone: "Europe/Berlin")
        #expect(other.status == 1, "\(other)")
        #expect(other.stderr.contains("imported before in the zone Asia/Seoul"), "\(other.stderr)")
        #expect(other.stderr.contains("--zone Asia/Seoul"))
        #expect(other.stderr.contains("nothing was imported"))
        #expect(try await lastPositionAsync(of: store) == last)
    }

    /// Issue 26: a title with terminal escapes is shown escaped in the report lines, and the
    /// summary counts rows, not refused events.
    @Test func warningsEscapeATitlesTerminalCodesAndTheSummaryCountsRows() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let review = String(repeating: "r", count: 10_001)
        let csv = """
            Book Id,Title,Author,Exclusive Shelf,My Rating,My Review,Date Read,Date Added
            1,Evil\u{1B}]0;owned\u{07}\u{1B}[31m Title,A,strange-shelf,0,,,2024/01/01
            2,Two Refusals,B,read,7,\(review),2024/02/01,2024/01/02

            """
        try Data(csv.utf8).write(to: dir.child("export.csv"))
        let run = try await importFrom("goodreads", dir.path("export.csv"), store: dir.path("store"))
        #expect(run.status == 0, "\(run)")
        #expect(!run.stdoutData.contains(0x1B) && !run.stdoutData.contains(0x07))
        #expect(run.stdout.contains("Evil\\u{1B}]0;owned\\u{7}\\u{1B}[31m Title: exclusive shelf"))
        #expect(run.stdoutLines.last?.contains("; 1 rows skipped, 1 warnings") == true, "\(run.stdout.suffix(300))")
    }

    @Test func dryRunWritesNothing() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let run = try await importFrom("storygraph", Self.fixture("storygraph.csv"), store: dir.path("store"), extra: ["--dry-run"])
        #expect(run.status == 0, "\(run)")
        #expect(run.stdoutLines.last?.hasPrefix("dry run: 6 books") == true)
        #expect(!FileManager.default.fileExists(atPath: dir.path("store")))
    }

    @Test(arguments: ["Pacific/Kiritimati", "America/Adak"])
    func aFinishOn20241231StaysOnThatDayWhateverTheMachinesTZ(machineTZ: String) async throws {
        for zone in ["Pacific/Kiritimati", "America/Adak"] {
            let dir = try CLITempDirectory(); defer { dir.remove() }
            let store = dir.path("store")
            let run = try await importFrom("goodreads", Self.fixture("goodreads-24.csv"), store: store, zone: zone, environment: ["TZ": machineTZ])
            #expect(run.status == 0, "\(run)")
            let audit = try await replayOKAsync(["audit", "--store", store, "--type", "BookFinished"], environment: ["TZ": machineTZ])
            let line = try #require(audit.stdoutLines.first { $0.contains("2024-12-31") }, "\(audit.stdout)")
            #expect(line.contains("\"finishedOn\":\"2024-12-31\""))
            #expect(line.contains("\t2024-12-31T12:00:00"))   // noon of that day in the reader's zone
            let show = try await replayOKAsync(["show", "--store", store, "--reader", Self.reader, "--json"], environment: ["TZ": machineTZ])
            #expect(show.stdout.contains("2024-12-31"))
        }
    }

    @Test func exportThenImportIntoANewStoreGivesTheSameViews() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let a = dir.path("a"), b = dir.path("b")
        for (source, file) in [("goodreads", "goodreads-24.csv"), ("storygraph", "storygraph.csv"), ("goodreads", "goodreads-31.csv")] {
            let run = try await importFrom(source, Self.fixture(file), store: a)
            #expect(run.status == 0, "\(run)")
        }
        let export = try await replayOKAsync(["export", "--store", a])
        try export.stdoutData.write(to: dir.child("history.jsonl"))
        try await replayOKAsync(["import", dir.path("history.jsonl"), "--store", b])
        let digestA = try await replayOKAsync(["rebuild", "--store", a, "--json"]).jsonObject()["digest"] as? String
        let digestB = try await replayOKAsync(["rebuild", "--store", b, "--json"]).jsonObject()["digest"] as? String
        #expect(digestA != nil && digestA == digestB)
        #expect(try await replayOKAsync(["export", "--store", b]).stdoutData == export.stdoutData)
    }

    @Test func badInputIsAUsageErrorOrOneLineFailure() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        let store = dir.path("store")
        let file = Self.fixture("goodreads-24.csv")
        for arguments in [["import-from", "goodreads", file, "--reader", "nope", "--zone", "UTC"],
                          ["import-from", "goodreads", file, "--reader", Self.reader, "--zone", "Mars/Olympus"],
                          ["import-from", "kindle", file, "--reader", Self.reader, "--zone", "UTC"],
                          ["import-from", "goodreads", file, "--zone", "UTC"]] {
            let run = try await replayAsync(arguments + ["--store", store])
            #expect(run.status == 64, "\(run)")
        }
        for (source, name, text) in [("goodreads", "goodreads-bad-quote.csv", "line 3"), ("goodreads", "storygraph.csv", "not a goodreads file"),
                                     ("koreader", "goodreads-24.csv", "not a koreader file"),
                                     ("goodreads", "not-text.csv", "not a goodreads file"), ("storygraph", "missing.csv", "cannot read")] {
            if name == "not-text.csv" { try Data([0x53, 0x51, 0xFF, 0xFE, 0x00, 0xC3]).write(to: dir.child(name)) }
            let run = try await importFrom(source, ["missing.csv", "not-text.csv"].contains(name) ? dir.path(name) : Self.fixture(name), store: store)
            #expect(run.status == 1, "\(run)")
            #expect(run.stderrLines.count == 1 && run.stderr.contains(text), "\(run)")
        }
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    /// SIGKILL while `import-from` runs: the store holds the whole import or none of it, and
    /// verifies (views equal a fresh fold). (About 9,600 events, more than the default part: the
    /// import is one part here, `--events-per-commit 20000`; `ImportPartsCLITests` kills between parts.)
    @Test func aKillMidImportLeavesAllOrNothing() async throws {
        let dir = try CLITempDirectory(); defer { dir.remove() }
        // A large Goodreads export: 2,500 read books with dates, ratings and reviews.
        let header = try String(contentsOfFile: Self.fixture("goodreads-31.csv"), encoding: .utf8).split(separator: "\n")[0]
        let names = header.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        var text = header + "\n"
        for i in 0..<2_500 {
            let values = ["Book Id": "\(100_000 + i)", "Title": "Book \(i)", "Exclusive Shelf": "read", "Author": "Author \(i % 97)",
                          "My Rating": "\(i % 6)", "Number of Pages": "\(100 + i % 400)", "Date Read": "2024/\(i % 12 + 1)/\(i % 28 + 1)",
                          "Date Added": "2023/\(i % 12 + 1)/\(i % 28 + 1)", "My Review": "\"Review \(i),\nsecond line\"", "Read Count": "1"]
            text += names.map { values[$0] ?? "" }.joined(separator: ",") + "\n"
        }
        let file = dir.child("big.csv")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let full = dir.path("full")
        let complete = try await importFrom("goodreads", file.path, store: full)
        #expect(complete.status == 0, "\(complete)")
        let total = try await lastPositionAsync(of: full)
        #expect(total > 2_500)

        var rng = SplitMix64(seed: 77)
        var outcomes: [String: Int] = [:]
        for trial in 0..<3 {
            let store = dir.path("killed-\(trial)")
            let process = Process()
            process.executableURL = try replayExecutable.get()
            process.arguments = ["import-from", "goodreads", file.path, "--reader", Self.reader, "--zone", "Asia/Seoul", "--store", store,
                                 "--events-per-commit", "20000"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // The store is opened just before the one write transaction: wait for its data file,
            // then kill at 0, 0.4 and 0.8 s (plus a seeded jitter): in the transaction, or after its commit.
            let dataFile = dir.child("killed-\(trial)").appendingPathComponent("data.mdb").path
            while process.isRunning, !FileManager.default.fileExists(atPath: dataFile) { try await Task.sleep(for: .milliseconds(1)) }
            try await Task.sleep(for: .microseconds(trial * 400_000 + Int(rng.next() % 100_000)))
            kill(process.processIdentifier, SIGKILL)
            while process.isRunning { try await Task.sleep(for: .milliseconds(5)) }
            let killed = process.terminationReason == .uncaughtSignal
            guard FileManager.default.fileExists(atPath: dataFile) else { outcomes["ended before the store was opened", default: 0] += 1; continue }
            let count = try await lastPositionAsync(of: store)
            #expect(count == 0 || count == total, "trial \(trial): \(count) of \(total) events after a kill")
            _ = try await replayOKAsync(["verify", "--store", store, "--json"])
            outcomes[killed ? (count == 0 ? "killed, nothing written" : "killed after commit") : "finished first", default: 0] += 1
            // Importing again completes the history.
            #expect(try await importFrom("goodreads", file.path, store: store).status == 0)
            #expect(try await lastPositionAsync(of: store) == total)
        }
        print("IMPORT KILL: \(outcomes) (\(total) events per import)")
    }

    func lastPositionAsync(of store: String) async throws -> Int {
        try #require(try await replayOKAsync(["stats", "--store", store, "--json"]).jsonObject()["lastPosition"] as? Int)
    }
}
