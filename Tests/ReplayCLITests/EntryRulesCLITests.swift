import Foundation
import TestSupport
import Testing

/// Issue 24, item 7, through the built `replay` binary: the entry rules on `import`, the year
/// `report` picks without `--year`, and the bound of `demo --readers`.
@Suite struct EntryRulesCLITests {
    typealias H = HardeningCLITests

    /// `report` without `--year` wrote year 2200 (a last event late on 2199-12-31 UTC is
    /// 2200-01-01 in Seoul), which `--year` refuses. The default year is now clamped into
    /// 1900 ... 2199.
    @Test func reportWithoutYearPicksAYearInsideTheRange() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let imported = try H.importLines([try H.bookAdded(), try H.pagesRead(10, occurred: "2199-12-31T14:00:00.000000Z"),
                                          try H.pagesRead(20, occurred: "2199-12-31T20:00:00.000000Z")], into: store, in: dir)
        #expect(imported.status == 0, "\(imported)")
        let run = try replay(["report", "--store", store, "--reader", H.reader, "--out", dir.path("report.html")])
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout.contains("report 2199 of reader"), "\(run)")
    }

    /// `demo --readers 100000` ran without bound; the option now takes 1 ... 10000, and a refusal
    /// names the option and the bound before anything is written.
    @Test func demoReadersIsBounded() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let run = try replay(["demo", "--store", store, "--readers", "10001", "--quiet"])
        #expect(run.status == 64, "\(run)")
        #expect(run.stderrLines.first?.contains("--readers must be at most 10000, not 10001") == true, "\(run)")
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    /// The entry rules reach `import`: one line naming the line number, the field and the rule,
    /// and nothing imported (no store created).
    @Test func importRefusesWhatCommandsRefuse() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let added = try H.bookAdded()
        let duplicate = added.replacingOccurrences(of: #"{"data""#, with: #"{"type":"BookAdded","data""#)
        let cases: [([String], String)] = [
            ([duplicate], "line 1: type: the key appears twice"),
            ([try H.line("ProfileUpdated", book: nil, data: ["nickname": "\u{200B}\u{202E}"])], "nickname: the nickname is empty"),
            ([added, try H.line("BookFinished", data: ["book": H.book, "finishedOn": "0001-01-01"])], "line 2: event"),
            ([added, try H.line("GoalSet", data: ["book": H.book, "startDate": "2025-03-01", "targetDate": "2025-04-01"]),
              try H.line("GoalChanged", data: ["book": H.book, "targetDate": "2025-02-01"])], "targetDate: target date 2025-02-01 is before the start date 2025-03-01"),
            ([try H.line("ShelfRenamed", book: nil, raw: Data(count: (1 << 20) + 1).base64EncodedString())], "rawPayload: the payload of an unknown event has 1048577 bytes"),
        ]
        for (lines, message) in cases {
            let run = try H.importLines(lines, into: store, in: dir)
            #expect(run.status == 1, "\(run)")
            #expect(run.stderrLines.count == 1 && run.stderr.contains(message) && run.stderr.contains("nothing was imported"), "\(run)")
            #expect(!FileManager.default.fileExists(atPath: store), "\(run)")
        }
    }
}
