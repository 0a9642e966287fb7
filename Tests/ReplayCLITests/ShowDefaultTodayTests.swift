import Foundation
import TestSupport
import Testing

/// Issue 16, case 3: without `--as-of`, `show` takes "today" from the reader's latest moment in the
/// history (the latest occurredAt or recordedAt of any of their events), or from the clock when
/// that is sooner; never from whichever event happened to be appended last.
@Suite("replay show: the default today")
struct ShowDefaultTodayTests {
    static let reader = "3f0c5a2e-8d4b-4c61-9a7e-2b1d6c0e9f13"
    static let book = "a61e2b7c-5d3f-4e89-b0c1-7f2a9d8e6c54"

    /// One JSON Lines envelope of the reader's book stream, in Seoul.
    static func line(_ n: Int, _ type: String, _ data: String, occurredAt: String, recordedAt: String? = nil) -> String {
        let id = String(format: "00000000-0000-4000-8000-%012d", n)
        return #"{"data":{"book":"\#(book)",\#(data)},"eventID":"\#(id)","occurredAt":"\#(occurredAt)","position":\#(n),"reader":"\#(reader)","recordedAt":"\#(recordedAt ?? occurredAt)","schemaVersion":1,"stream":"book:\#(reader):\#(book)","streamVersion":\#(n),"timeZone":"Asia/Seoul","type":"\#(type)"}"#
    }

    static let metadata = #""metadata":{"authors":"한강 (지은이)","pageCount":300,"title":"채식주의자"},"status":"reading""#

    /// Imports `lines` into a fresh store and returns the `show --json` document of the reader.
    func show(_ lines: [String], in temp: CLITempDirectory) throws -> [String: Any] {
        let file = temp.child("history.jsonl"), store = temp.path("store")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        try replayOK(["import", "--store", store, file.path])
        let documents = try #require(try replayOK(["show", "--store", store, "--json", "--reader", Self.reader]).json() as? [[String: Any]])
        return try #require(documents.first)
    }

    @Test("a back-dated record appended last does not pull today back to its day")
    func backDatedLastEvent() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        // Times in UTC; Seoul is +09:00, so 12:00Z is 21:00 the same day there.
        let lines = [
            Self.line(1, "BookAdded", Self.metadata, occurredAt: "2026-06-01T00:00:00.000000Z"),
            Self.line(2, "PagesRead", #""position":10"#, occurredAt: "2026-06-01T12:00:00.000000Z"),   // 06-01: 10
            Self.line(3, "PagesRead", #""position":20"#, occurredAt: "2026-06-02T12:00:00.000000Z"),   // 06-02: 10
            Self.line(4, "PagesRead", #""position":40"#, occurredAt: "2026-06-05T12:00:00.000000Z"),   // 06-05: 10 (30 → 40)
            Self.line(5, "PagesRead", #""position":60"#, occurredAt: "2026-06-07T12:00:00.000000Z"),   // 06-07: 20
            // The pages of 06-03 (20 → 30), recorded on 06-08 08:00 in Seoul (06-07 23:00Z), appended last.
            Self.line(6, "PagesRead", #""position":30"#, occurredAt: "2026-06-03T12:00:00.000000Z",
                      recordedAt: "2026-06-07T23:00:00.000000Z"),
        ]
        let document = try show(lines, in: temp)
        // The latest moment is the recordedAt of event 6: 06-08 08:00 in Seoul. (The last appended
        // event happened on 06-03, which the old default took for today.)
        #expect(document["today"] as? String == "2026-06-08")
        let daily = try #require(document["daily"] as? [[String: Any]])
        // 30 days ending today: 05-10 … 06-08; the last 8 are 06-01 … 06-08, with 06-05 and 06-07.
        #expect(daily.first?["day"] as? String == "2026-05-10")
        #expect(daily.last?["day"] as? String == "2026-06-08")
        #expect(daily.suffix(8).compactMap { $0["pages"] as? Int } == [10, 10, 10, 0, 10, 0, 20, 0])
    }

    @Test("events stamped in the future: today is the clock's day, not theirs")
    func futureEvents() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let before = Date()
        let lines = [
            Self.line(1, "BookAdded", Self.metadata, occurredAt: "2026-06-01T00:00:00.000000Z"),
            Self.line(2, "PagesRead", #""position":10"#, occurredAt: "2199-06-01T12:00:00.000000Z"),
        ]
        let document = try show(lines, in: temp)
        let after = Date()
        // The clock is sooner than 2199-06-01, so today is the clock's day in Seoul (the run may
        // straddle midnight, so either end of it).
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul")!
        func day(_ date: Date) -> String {
            let c = calendar.dateComponents([.year, .month, .day], from: date)
            return String(format: "%04d-%02d-%02d", c.year!, c.month!, c.day!)
        }
        let today = try #require(document["today"] as? String)
        #expect([day(before), day(after)].contains(today), "today \(today)")
    }
}
