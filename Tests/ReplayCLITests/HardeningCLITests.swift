import Foundation
import TestSupport
import Testing

/// Issue 10 (hardening), the CLI and import items: each test failed against the build before its fix.
@Suite struct HardeningCLITests {
    static let reader = UUID().uuidString.lowercased()
    static let book = UUID().uuidString.lowercased()

    /// One export-format line. `stream` defaults to the book stream when `book` is given, else the
    /// reader stream; `data` nil with `raw` gives an unknown event.
    static func line(_ type: String, book: String? = HardeningCLITests.book, stream: String? = nil, data: [String: Any]? = nil,
                     raw: String? = nil, id: String = UUID().uuidString.lowercased(),
                     occurred: String = "2025-03-01T10:00:00.000000Z", recorded: String? = nil) throws -> String {
        var object: [String: Any] = [
            "position": 1, "eventID": id, "streamVersion": 1, "reader": reader,
            "stream": stream ?? (book.map { "book:\(reader):\($0)" } ?? "reader:\(reader)"),
            "occurredAt": occurred, "recordedAt": recorded ?? occurred, "timeZone": "Asia/Seoul",
            "type": type, "schemaVersion": 1,
        ]
        if let data { object["data"] = data }
        if let raw { object["rawPayload"] = raw }
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    static func bookAdded(title: String = "A long book", pageCount: Int = 300, authors: String = "An Author",
                          book: String = HardeningCLITests.book, id: String = UUID().uuidString.lowercased()) throws -> String {
        try line("BookAdded", book: book, data: ["book": book, "status": "reading",
                                                 "metadata": ["title": title, "authors": authors, "pageCount": pageCount]], id: id)
    }

    static func pagesRead(_ position: Int, book: String = HardeningCLITests.book, id: String = UUID().uuidString.lowercased(),
                          occurred: String = "2025-03-01T10:00:00.000000Z") throws -> String {
        try line("PagesRead", book: book, data: ["book": book, "position": position], id: id, occurred: occurred)
    }

    /// Writes `lines` to a file in `dir` and imports it into `store`.
    @discardableResult
    static func importLines(_ lines: [String], into store: String, in dir: CLITempDirectory, name: String = "in.jsonl") throws -> ReplayRun {
        let file = dir.child(name)
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        return try replay(["import", "--store", store, file.path])
    }

    // MARK: 4. a day of 10,000 pages or more

    @Test func showPrintsADayOfTwentyThousandPages() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let imported = try Self.importLines([try Self.bookAdded(pageCount: 20_000), try Self.pagesRead(20_000)], into: store, in: dir)
        try #require(imported.status == 0, "\(imported)")
        let run = try replay(["show", "--store", store])
        #expect(run.status == 0, "\(run)")
        #expect(run.stdoutLines.contains { $0.hasPrefix("  2025-03-01 20000 █") }, "\(run.stdout)")
        #expect(run.stdout.contains(" 20000 p "), "the time-of-day and monthly rows show the count")
    }

    // MARK: 5. an event type this build does not know

    @Test func auditListsAnEventOfAnUnknownType() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let raw = Data([1, 2, 3, 250]).base64EncodedString()
        let imported = try Self.importLines([try Self.line("ShelfRenamed", book: nil, raw: raw)], into: store, in: dir)
        try #require(imported.status == 0, "\(imported)")
        let run = try replay(["audit", "--store", store])
        #expect(run.status == 0, "\(run)")
        let fields = try #require(run.stdoutLines.first).split(separator: "\t").map(String.init)
        #expect(fields.count == 5)
        #expect(fields[3] == "ShelfRenamed@1")
        #expect(fields[4] == "{\"bytes\":4,\"rawPayload\":\"\(raw)\"}")
        // The JSON form keeps it exactly.
        let json = try replayOK(["audit", "--store", store, "--json"]).stdout
        #expect(json.contains("\"rawPayload\":\"\(raw)\""))
    }

    // MARK: 7. terminal escape sequences in imported text

    @Test func textOutputShowsControlCharactersEscapedAndJSONKeepsThem() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let nickname = "\u{1B}]0;pwned\u{07}"
        let title = "Red \u{1B}[31mtitle\u{9B}2J \u{202E}gnp.exe"
        let sentence = "line one\nline two \u{1B}[2J"
        let lines = [
            try Self.line("ProfileUpdated", book: nil, data: ["nickname": nickname]),
            try Self.bookAdded(title: title),
            try Self.line("GoalSet", data: ["book": Self.book, "startDate": "2025-03-01", "targetDate": "2025-03-20"]),
            try Self.pagesRead(10),
            try Self.line("SentenceCollected", data: ["book": Self.book, "sentence": UUID().uuidString, "text": sentence]),
        ]
        let imported = try Self.importLines(lines, into: store, in: dir)
        try #require(imported.status == 0, "\(imported)")
        func controls(_ text: String) -> [Unicode.Scalar] {
            text.unicodeScalars.filter { s in
                (s.value < 0x20 && s != "\n" && s != "\t") || (0x7F...0x9F).contains(s.value) || (0x202A...0x202E).contains(s.value)
            }
        }
        for arguments in [["show"], ["audit"], ["show", "--reader", Self.reader, "--since", "2025-03-01"]] {
            let run = try replayOK(arguments + ["--store", store])
            #expect(controls(run.stdout).isEmpty, "\(arguments): \(controls(run.stdout).map { String($0.value, radix: 16) })")
        }
        let show = try replayOK(["show", "--store", store]).stdout
        #expect(show.contains("(\\u{1B}]0;pwned\\u{7})"), "the nickname is shown escaped: \(show.prefix(200))")
        #expect(show.contains("Red \\u{1B}[31mtitle\\u{9B}2J \\u{202E}gnp.exe"))
        // JSON output stays exact.
        let documents = try #require(try replayOK(["show", "--store", store, "--json"]).json() as? [[String: Any]])
        #expect(documents.first?["nickname"] as? String == nickname)
        let exported = try replayOK(["export", "--store", store]).stdout
        #expect(try jsonLines(exported).contains { ($0["data"] as? [String: Any])?["text"] as? String == sentence })
    }

    // MARK: 8. import keeps the rules commands keep

    @Test(arguments: [
        ("a book event under the reader stream", "stream", "[rule: inconsistent]"),
        ("a profile event under a book stream", "stream", "[rule: inconsistent]"),
        ("stream and payload naming different books", "stream", "[rule: inconsistent]"),
        ("a goal whose target is before its start", "targetDate", "is before start"),   // refused by the decoder
        ("pages beyond the page count of the same file", "position", "[rule: outOfRange]"),
        ("occurredAt after recordedAt", "occurredAt", "[rule: inconsistent]"),
        ("a book added as finished", "status", "[rule: malformed]"),
    ])
    func importRefusesWhatCommandsRefuse(label: String, field: String, rule: String) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try #require(try Self.importLines([try Self.bookAdded(book: UUID().uuidString.lowercased())], into: store, in: dir, name: "seed.jsonl").status == 0)
        let other = UUID().uuidString.lowercased()
        let bad: String
        switch label {
        case "a book event under the reader stream":
            bad = try Self.line("BookLiked", stream: "reader:\(Self.reader)", data: ["book": Self.book])
        case "a profile event under a book stream":
            bad = try Self.line("ProfileUpdated", book: Self.book, data: ["nickname": "reader"])
        case "stream and payload naming different books":
            bad = try Self.line("BookLiked", book: Self.book, data: ["book": other])
        case "a goal whose target is before its start":
            bad = try Self.line("GoalSet", data: ["book": Self.book, "startDate": "2025-03-10", "targetDate": "2025-03-01"])
        case "pages beyond the page count of the same file":
            bad = try Self.pagesRead(301)
        case "occurredAt after recordedAt":
            bad = try Self.line("BookLiked", data: ["book": Self.book], occurred: "2025-03-02T10:00:00.000000Z",
                                recorded: "2025-03-01T10:00:00.000000Z")
        default:
            bad = try Self.line("BookAdded", book: other, data: ["book": other, "status": "finished",
                                                                 "metadata": ["title": "T", "authors": "", "pageCount": 10]])
        }
        let before = try snapshot(of: URL(fileURLWithPath: store))
        let run = try Self.importLines([try Self.bookAdded(), bad, try Self.pagesRead(5)], into: store, in: dir)
        #expect(run.status == 1, "\(label): \(run)")
        #expect(run.stderrLines.count == 1, "\(label): \(run.stderr)")
        #expect(run.stderr.contains("line 2"), "\(label): \(run.stderr)")
        #expect(run.stderr.contains("\(field):") && run.stderr.contains(rule), "\(label): \(run.stderr)")
        #expect(run.stderr.contains("nothing was imported"), "\(label)")
        #expect(try snapshot(of: URL(fileURLWithPath: store)) == before, "\(label): the store changed")
    }

    @Test func importChecksPagesAgainstThePageCountTheStoreKnows() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try #require(try Self.importLines([try Self.bookAdded(pageCount: 300)], into: store, in: dir, name: "a.jsonl").status == 0)
        // The store is opened for this check: its lock file records the reader slot; the data file must not change.
        let before = try Data(contentsOf: URL(fileURLWithPath: store).appendingPathComponent("data.mdb"))
        let run = try Self.importLines([try Self.pagesRead(250), try Self.pagesRead(301)], into: store, in: dir)
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("line 2") && run.stderr.contains("above the page count 300"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store).appendingPathComponent("data.mdb")) == before)
        // Up to the page count is fine.
        #expect(try Self.importLines([try Self.pagesRead(250), try Self.pagesRead(300)], into: store, in: dir).status == 0)
    }

    // MARK: 9. every string field has a limit

    @Test(arguments: [
        ("metadata.authors", 1_000), ("metadata.coverURL", 2_048), ("data.theme", 64), ("data.imageFileName", 255), ("type", 100),
    ])
    func importRefusesAStringOverItsLimit(field: String, limit: Int) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let long = String(repeating: "x", count: limit + 1)
        let bad: String
        switch field {
        case "metadata.authors": bad = try Self.bookAdded(authors: long)
        case "metadata.coverURL":
            bad = try Self.line("BookAdded", data: ["book": Self.book, "status": "reading",
                                                    "metadata": ["title": "T", "authors": "", "coverURL": long]])
        case "data.theme":
            bad = try Self.line("GoalSet", data: ["book": Self.book, "startDate": "2025-03-01", "targetDate": "2025-03-10", "theme": long])
        case "data.imageFileName":
            bad = try Self.line("ProfileUpdated", book: nil, data: ["nickname": "n", "imageFileName": long])
        default:
            bad = try Self.line("T" + long.dropFirst(), book: nil, raw: "AQI=")
        }
        let run = try Self.importLines([bad], into: store, in: dir)
        #expect(run.status == 1, "\(field): \(run)")
        #expect(run.stderr.contains("line 1"), "\(run.stderr)")
        #expect(run.stderr.contains(field) && run.stderr.contains("at most \(limit)"), "\(field): \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store), "a refused file created the store")
        // At the limit it is accepted (the type tag: the same length is a valid unknown type).
        let ok: String
        switch field {
        case "metadata.authors": ok = try Self.bookAdded(authors: String(long.dropFirst()))
        case "type": ok = try Self.line("T" + long.dropFirst(2), book: nil, raw: "AQI=")
        default: return
        }
        #expect(try Self.importLines([ok], into: store, in: dir).status == 0)
    }

    // MARK: 10. the same event ID with different content

    @Test func aRepeatedEventIDWithOtherContentIsAConflictAndNothingIsImported() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        let id = UUID().uuidString.lowercased()
        // Within one file: line 3 repeats line 2's ID with another position.
        let inFile = try Self.importLines([try Self.bookAdded(), try Self.pagesRead(10, id: id), try Self.pagesRead(20, id: id)],
                                          into: store, in: dir)
        #expect(inFile.status == 1, "\(inFile)")
        #expect(inFile.stderr.contains("line 3") && inFile.stderr.contains("line 2") && inFile.stderr.contains(id)
                && inFile.stderr.contains("conflict"), "\(inFile.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store))

        // Against the store: the same ID stored with another position.
        try #require(try Self.importLines([try Self.bookAdded(), try Self.pagesRead(10, id: id)], into: store, in: dir).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: store).appendingPathComponent("data.mdb"))
        let again = try Self.importLines([try Self.pagesRead(30), try Self.pagesRead(20, id: id)], into: store, in: dir)
        #expect(again.status == 1, "\(again)")
        #expect(again.stderr.contains("line 2") && again.stderr.contains(id) && again.stderr.contains("already stored at position 2"),
                "\(again.stderr)")
        #expect(again.stderr.contains("nothing was imported"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store).appendingPathComponent("data.mdb")) == before)
        // The same content again is still skipped, as before.
        let same = try Self.importLines([try Self.pagesRead(10, id: id)], into: store, in: dir)
        #expect(same.status == 0 && same.stdout.contains("1 already stored"), "\(same)")
    }

    // MARK: 11. a range of ten thousand years

    @Test func showClampsAHugeRangeToTheReadersHistory() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try makeDemoStore(at: store)
        let reader = try #require(try stats(of: store)["eventsPerReader"] as? [String: Int]).keys.sorted()[0]
        let run = try replayOK(["show", "--store", store, "--json", "--reader", reader, "--since", "0001-01-01", "--until", "9999-12-31"])
        #expect(run.stdoutData.count < 100_000, "\(run.stdoutData.count) bytes")
        let document = try #require((try run.json() as? [[String: Any]])?.first)
        let daily = try #require(document["daily"] as? [[String: Any]]).compactMap { $0["day"] as? String }
        // The demo's 40 days (local days may lie a day off the UTC dates of the export).
        #expect((30...45).contains(daily.count), "\(daily.count) days")
        #expect(daily.first.map { $0 >= "2024-12-31" } == true && daily.last.map { $0 <= "2025-03-01" } == true, "\(daily)")
        let text = try replayOK(["show", "--store", store, "--reader", reader, "--since", "0001-01-01", "--until", "9999-12-31"])
        #expect(text.stdoutLines.count < 200, "\(text.stdoutLines.count) lines")
        // A range wholly outside the history shows nothing, without failing.
        let outside = try replayOK(["show", "--store", store, "--reader", reader, "--since", "1990-01-01", "--until", "1990-12-31"])
        #expect(outside.stdout.contains("outside the reader's history"))
    }

    // MARK: 14. negative numbers and a backup onto a file

    @Test(arguments: [("--readers", "at least 1"), ("--days", "1 ... 3650"), ("--events", "at least 1"), ("--seed", "whole number")])
    func negativeNumbersAreUsageErrorsNamingTheRule(option: String, rule: String) throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let run = try replay(["demo", "--store", dir.path("store"), "--quiet", option, "-5"])
        #expect(run.status == 64, "\(run)")
        #expect(run.stderr.contains(option) && run.stderr.contains(rule), "\(run.stderr)")
        #expect(!run.stderr.contains("Missing value"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("store")))
    }

    @Test func backupOntoAFileIsOneClearLine() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try #require(try Self.importLines([try Self.bookAdded()], into: store, in: dir).status == 0)
        let file = dir.child("a-file")
        try Data("keep".utf8).write(to: file)
        let run = try replay(["backup", "--store", store, file.path])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1 && run.stderr.contains("is a file, not a directory"), "\(run.stderr)")
        #expect(!run.stderr.contains("NSCocoaErrorDomain"))
        #expect(try Data(contentsOf: file) == Data("keep".utf8))
    }
}
