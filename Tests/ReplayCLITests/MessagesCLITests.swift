import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 24, item 8: each message names its cause in one line (input files that are devices or
/// empty, `show --until` alone, a negative `--as-of`, a year past the range).
@Suite struct MessagesCLITests {
    /// `import-from goodreads /dev/zero` said "no permission" as root, and `import /dev/null`
    /// said "cannot read". A device is refused as not a regular file, before anything is read
    /// or created. The device is a zero device the test makes in its own directory.
    @Test func anInputFileThatIsADeviceIsNamedAsSuch() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let device = dir.path("zero-device")
        guard mknod(device, S_IFCHR | 0o666, dev_t(1 << 8 | 5)) == 0 else {
            print("anInputFileThatIsADeviceIsNamedAsSuch: skipped, mknod: \(String(cString: strerror(errno)))")
            return
        }
        let store = dir.path("store")
        let reader = UUID().uuidString
        let runs = [
            try replay(["import-from", "goodreads", device, "--reader", reader, "--zone", "Asia/Seoul", "--store", store]),
            try replay(["import", device, "--store", store]),
        ]
        for run in runs {
            #expect(run.status == 1, "\(run)")
            #expect(run.stderrLines.count == 1 && run.stderr.contains(device)
                    && run.stderr.contains("is a device, not a regular file"), "\(run)")
        }
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    /// An empty JSON Lines file says so, imports nothing and creates no store.
    @Test func importOfAnEmptyFileSaysSo() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let empty = dir.path("empty.jsonl")
        try Data().write(to: URL(fileURLWithPath: empty))
        let store = dir.path("store")
        let run = try replay(["import", empty, "--store", store])
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout.contains("\(empty): empty file, nothing imported"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    /// `show --until` alone, before the default start of the bars (30 days before "today"),
    /// said "--since is after --until" although no --since was given. The bars now end at
    /// --until and start 30 days before it (clamped to the reader's history).
    @Test func showUntilAloneEndsTheDailyBarsThere() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let (store, reader) = try ReportBrowserTests.demoReader(in: dir)
        let run = try replay(["show", "--store", store, "--reader", reader, "--as-of", "2025-02-09",
                              "--until", "2025-01-05", "--json"])
        #expect(run.status == 0, "\(run)")
        guard run.status == 0 else { return }
        let shown = try #require((try run.json() as? [[String: Any]])?.first)
        let days = try #require(shown["daily"] as? [[String: Any]]).compactMap { $0["day"] as? String }
        #expect(days.first == "2025-01-01" && days.last == "2025-01-05", "\(days)")
    }

    /// `--as-of -1` was taken for an option ("Missing value"); a year past 9999 was "not an ISO
    /// 8601 date", and a "today" before 1900 was accepted. Each now names the value and the rule.
    @Test(arguments: [
        (["show", "--as-of", "-1"], "The value '-1' is invalid for '--as-of <date-or-instant>': not an ISO 8601 date"),
        (["show", "--as-of", "10000-01-01"], "'10000-01-01' is invalid for '--as-of <date-or-instant>': the year 10000 is outside 1900 ... 2199"),
        (["show", "--as-of", "0001-01-01"], "'0001-01-01' is invalid for '--as-of <date-or-instant>': the year 1 is outside 1900 ... 2199"),
        (["show", "--since", "99999-01-01T00:00:00Z"], "'99999-01-01T00:00:00Z' is invalid for '--since <date-or-instant>': the year 99999 is outside 1 ... 9999"),
        (["report", "--reader", "7A1C0E3E-4A64-4C43-9C5B-2B7D1E0F6A11", "--out", "r.html", "--as-of", "10000-01-01"],
         "'10000-01-01' is invalid for '--as-of <date-or-instant>': the year 10000 is outside 1900 ... 2199"),
    ])
    func dateOptionsNameTheValueAndTheRange(arguments: [String], message: String) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let run = try replay(arguments + ["--store", dir.path("store")])
        #expect(run.status == 64, "\(run)")
        #expect(run.stderrLines.first?.contains(message) == true, "\(run)")
    }
}
