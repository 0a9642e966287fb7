import Foundation
import TestSupport
import Testing

@Suite("replay audit")
struct AuditCommandTests {
    @Test("audit lists the whole history in position order, one row per event")
    func auditAll() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let last = try makeDemoStore(at: store)
        let run = try replayOK(["audit", "--store", store])
        let rows = run.stdoutLines
        #expect(rows.count == last)
        let positions = rows.map { Int($0.split(separator: "\t").first ?? "") ?? -1 }
        #expect(positions == Array(1...last))
        // position \t local time and zone \t reader \t type \t fields
        for row in rows.prefix(20) {
            let fields = row.split(separator: "\t", omittingEmptySubsequences: false)
            #expect(fields.count == 5, "\(row)")
            #expect(fields[1].firstMatch(of: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d \S+$/) != nil, "\(row)")
            #expect(UUID(uuidString: String(fields[2])) != nil)
            #expect(fields[4].hasPrefix("{"))
        }
        // --json is the export, line for line.
        let json = try replayOK(["audit", "--store", store, "--json"])
        #expect(json.stdoutData == (try replayOK(["export", "--store", store]).stdoutData))
    }

    @Test("audit --reader --type --since --until selects exactly the matching events, in order")
    func auditFilters() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let all = try jsonLines(try replayOK(["export", "--store", store]).stdout)
        let reader = try #require(all.first?["reader"] as? String)
        let since = "2025-01-10", until = "2025-01-20"
        func day(_ e: [String: Any]) -> String { String((e["occurredAt"] as! String).prefix(10)) }
        let expected = all.filter {
            $0["reader"] as? String == reader && $0["type"] as? String == "PagesRead" && day($0) >= since && day($0) <= until
        }.map { $0["position"] as! Int }
        #expect(expected.count > 3)

        let filters = ["--reader", reader, "--type", "PagesRead", "--since", since, "--until", until]
        let json = try jsonLines(try replayOK(["audit", "--store", store, "--json"] + filters).stdout)
        #expect(json.map { $0["position"] as! Int } == expected)
        #expect(json.allSatisfy { $0["reader"] as? String == reader && $0["type"] as? String == "PagesRead" })

        let text = try replayOK(["audit", "--store", store] + filters).stdoutLines
        let positions = text.map { Int($0.split(separator: "\t").first ?? "") ?? -1 }
        #expect(positions == expected)
        // The type column is the tag with its schema version.
            #expect(text.allSatisfy { $0.split(separator: "\t")[2] == reader && $0.split(separator: "\t")[3] == "PagesRead@1" })

        // Each filter alone.
        let byReader = try replayOK(["audit", "--store", store, "--json", "--reader", reader]).stdoutLines
        #expect(byReader.count == all.filter { $0["reader"] as? String == reader }.count)
        #expect(byReader.count < all.count)
        let byType = try jsonLines(try replayOK(["audit", "--store", store, "--json", "--type", "PagesRead"]).stdout)
        #expect(byType.map { $0["position"] as! Int } == all.filter { $0["type"] as? String == "PagesRead" }.map { $0["position"] as! Int })
        let bySince = try jsonLines(try replayOK(["audit", "--store", store, "--json", "--since", since]).stdout)
        #expect(bySince.map { $0["position"] as! Int } == all.filter { day($0) >= since }.map { $0["position"] as! Int })
        let byUntil = try jsonLines(try replayOK(["audit", "--store", store, "--json", "--until", until]).stdout)
        #expect(byUntil.map { $0["position"] as! Int } == all.filter { day($0) <= until }.map { $0["position"] as! Int })
    }

    @Test("audit usage errors are exit 64",
          arguments: [(["--type", "PageRead"], "--type"),
                      (["--since", "2025-01-20", "--until", "2025-01-10"], "--since"),
                      (["--reader", "nope"], "--reader"),
                      (["--book", "4a1e1d2c-0000-4000-8000-000000000000"], "--book"),
                      (["--since", "last week"], "last week")])
    func auditUsageErrors(arguments: [String], named: String) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let run = try replay(["audit", "--store", store] + arguments)
        #expect(run.status == 64, "\(run)")
        #expect(run.stdout.isEmpty)
        #expect(run.stderrLines.first?.contains(named) == true, "\(run)")
    }
}

@Suite("replay export and import")
struct ExchangeCommandTests {
    @Test("export, import into an empty store, export again: the same bytes; a second import adds nothing")
    func roundTrip() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let original = temp.path("original"), copy = temp.path("copy")
        let last = try makeDemoStore(at: original)
        let exported = try replayOK(["export", "--store", original]).stdoutData
        let file = temp.child("history.jsonl")
        try exported.write(to: file)
        let lines = try jsonLines(String(decoding: exported, as: UTF8.self))
        #expect(lines.count == last)
        #expect(lines.map { $0["position"] as! Int } == Array(1...last))
        #expect(exported.last == 0x0A)

        let first = try replayOK(["import", "--store", copy, file.path])
        #expect(first.stdout == "imported \(last) new events of \(last) from \(file.path) (0 already stored)\n", "\(first)")
        #expect(try replayOK(["export", "--store", copy]).stdoutData == exported)

        let again = try replayOK(["import", "--store", copy, file.path])
        #expect(again.stdout.hasPrefix("imported 0 new events of \(last)"), "\(again)")
        #expect(try lastPosition(of: copy) == last)

        let originalReport = try verifyReport(of: original), copyReport = try verifyReport(of: copy)
        #expect(copyReport["ok"] as? Bool == true)
        #expect(copyReport["viewDigest"] as? String == originalReport["viewDigest"] as? String)
        #expect((copyReport["viewDigest"] as? String)?.isEmpty == false)
        let rebuilt = try replayOK(["rebuild", "--store", copy, "--json"]).jsonObject()
        #expect(rebuilt["digest"] as? String == originalReport["viewDigest"] as? String)
        // The dashboards agree too.
        let sameDashboard = try replayOK(["show", "--store", copy]).stdout == (try replayOK(["show", "--store", original]).stdout)
        #expect(sameDashboard, "the imported store shows a different dashboard")
    }

    @Test("import from stdin (-) and a partial overlap: only the new events are added")
    func importOverlap() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let original = temp.path("original"), copy = temp.path("copy")
        let last = try makeDemoStore(at: original)
        let lines = try replayOK(["export", "--store", original]).stdout.split(separator: "\n").map(String.init)
        let head = lines.prefix(10).joined(separator: "\n") + "\n"
        let run = try replay(["import", "--store", copy, "-"], stdin: Data(head.utf8))
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout.hasPrefix("imported 10 new events of 10 from -"))
        let file = temp.child("all.jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        let rest = try replayOK(["import", "--store", copy, file.path])
        #expect(rest.stdout.hasPrefix("imported \(last - 10) new events of \(last) "), "\(rest)")
        #expect(rest.stdout.contains("(10 already stored)"))
        let sameExport = try replayOK(["export", "--store", copy]).stdout == lines.joined(separator: "\n") + "\n"
        #expect(sameExport, "the store built by two overlapping imports exports differently")
        #expect(try verifyReport(of: copy)["ok"] as? Bool == true)
    }

    @Test("a malformed line stops the import with its line number; nothing of the file is imported")
    func malformedLine() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let original = temp.path("original")
        try makeDemoStore(at: original)
        let lines = try replayOK(["export", "--store", original]).stdout.split(separator: "\n").map(String.init)

        // Into a store that does not exist yet: it is not created.
        let bad = temp.child("bad.jsonl")
        try Data(([lines[0], lines[1], "{\"nope\":", lines[2]].joined(separator: "\n") + "\n").utf8).write(to: bad)
        let missing = temp.path("missing")
        let run = try replay(["import", "--store", missing, bad.path])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains("line 3"), "\(run)")
        #expect(run.stderr.contains("nothing was imported"))
        #expect(run.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: missing))

        // Into a store that has events: it is unchanged, though lines 1 and 2 are new to it.
        let target = temp.path("target")
        let firstFive = temp.child("five.jsonl")
        try Data((lines.prefix(5).joined(separator: "\n") + "\n").utf8).write(to: firstFive)
        try replayOK(["import", "--store", target, firstFive.path])
        let statsBefore = try stats(of: target)
        let exportBefore = try replayOK(["export", "--store", target]).stdoutData
        let badLater = temp.child("bad-later.jsonl")
        // Line 5 is blank (skipped but counted), line 6 is a truncated envelope.
        let broken = String(lines[9].prefix(60))
        try Data(([lines[5], lines[6], lines[7], lines[8], "", broken, lines[10]].joined(separator: "\n") + "\n").utf8)
            .write(to: badLater)
        let second = try replay(["import", "--store", target, badLater.path])
        #expect(second.status == 1, "\(second)")
        #expect(second.stderrLines.count == 1)
        #expect(second.stderr.contains("line 6"), "\(second)")
        let statsAfter = try stats(of: target)
        #expect(statsAfter["lastPosition"] as? Int == 5)
        #expect(statsAfter["lastPosition"] as? Int == statsBefore["lastPosition"] as? Int)
        #expect(statsAfter["eventsPerType"] as? [String: Int] == statsBefore["eventsPerType"] as? [String: Int])
        #expect(try replayOK(["export", "--store", target]).stdoutData == exportBefore)
    }

    @Test("import of a file that does not exist fails with one line and creates no store")
    func importMissingFile() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let run = try replay(["import", "--store", store, temp.path("nothing.jsonl")])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains("nothing.jsonl"))
        #expect(!FileManager.default.fileExists(atPath: store))
        let usage = try replay(["import", "--store", store])
        #expect(usage.status == 64, "a missing FILE argument is a usage error: \(usage)")
    }

    @Test("export --reader writes exactly that reader's events, in position order")
    func exportReader() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let all = try replayOK(["export", "--store", store]).stdout.split(separator: "\n").map(String.init)
        let perReader = try #require(try stats(of: store)["eventsPerReader"] as? [String: Int])
        #expect(perReader.count == 2)
        var union = Set<String>()
        for (reader, count) in perReader {
            let run = try replayOK(["export", "--store", store, "--reader", reader])
            let lines = run.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == count)
            let parsed = try jsonLines(run.stdout)
            #expect(parsed.allSatisfy { $0["reader"] as? String == reader })
            let positions = parsed.map { $0["position"] as! Int }
            #expect(positions == positions.sorted())
            // The same lines, byte for byte, as in the full export.
            let sameLines = lines == all.filter { $0.contains("\"reader\":\"\(reader)\"") }
            #expect(sameLines, "export --reader \(reader) differs from that reader's lines of the full export")
            union.formUnion(lines)
        }
        #expect(union.count == all.count)
        let stranger = try replayOK(["export", "--store", store, "--reader", UUID().uuidString.lowercased()])
        #expect(stranger.stdout.isEmpty)
        let bad = try replay(["export", "--store", store, "--reader", "x"])
        #expect(bad.status == 64)
    }
}

@Suite("replay backup and stats")
struct BackupStatsCommandTests {
    @Test("backup writes a copy that verifies with the same digest; a non-empty destination fails")
    func backup() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let last = try makeDemoStore(at: store)
        let destination = temp.child("backups/copy")
        let run = try replayOK(["backup", "--store", store, destination.path])
        #expect(run.stdout.hasPrefix("backed up \(last) events to "), "\(run)")
        #expect(run.stdout.contains(destination.lastPathComponent))
        #expect(FileManager.default.fileExists(atPath: destination.appendingPathComponent("data.mdb").path))

        let original = try verifyReport(of: store), copy = try verifyReport(of: destination.path)
        #expect(copy["ok"] as? Bool == true)
        #expect(copy["records"] as? Int == last)
        #expect(copy["viewDigest"] as? String == original["viewDigest"] as? String)
        #expect(try replayOK(["export", "--store", destination.path]).stdoutData
                == (try replayOK(["export", "--store", store]).stdoutData))

        // An existing empty directory is fine.
        let empty = temp.child("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        try replayOK(["backup", "--store", store, empty.path])
        #expect(try verifyReport(of: empty.path)["ok"] as? Bool == true)

        // A non-empty one is not, and it is left alone.
        let busy = temp.child("busy")
        try FileManager.default.createDirectory(at: busy, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: busy.appendingPathComponent("notes.txt"))
        let before = try snapshot(of: busy)
        let refused = try replay(["backup", "--store", store, busy.path])
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stderrLines.count == 1)
        #expect(refused.stderr.contains("not empty"))
        #expect(try snapshot(of: busy) == before)
        // Backing up onto the copy (a store, so not empty) fails too.
        #expect(try replay(["backup", "--store", store, destination.path]).status == 1)

        let missingArgument = try replay(["backup", "--store", store])
        #expect(missingArgument.status == 64)
    }

    @Test("stats: the text and the JSON keys agree with the store")
    func stats() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let last = try makeDemoStore(at: store)
        let json = try replayOK(["stats", "--store", store, "--json"]).jsonObject()
        #expect(Set(json.keys) == ["eventsPerType", "eventsPerReader", "fileBytes", "mapBytes", "lastPosition",
                                   "viewCheckpoint", "dayStartHour"])
        let perType = try #require(json["eventsPerType"] as? [String: Int])
        let perReader = try #require(json["eventsPerReader"] as? [String: Int])
        #expect(json["lastPosition"] as? Int == last)
        #expect(json["viewCheckpoint"] as? Int == last)
        #expect(perType.values.reduce(0, +) == last)
        #expect(perReader.values.reduce(0, +) == last)
        #expect(perReader.count == 2)
        #expect((perType["PagesRead"] ?? 0) > 0)
        #expect(json["dayStartHour"] as? Int == 0)
        let fileBytes = try #require(json["fileBytes"] as? Int), mapBytes = try #require(json["mapBytes"] as? Int)
        #expect(fileBytes > 0 && fileBytes <= mapBytes)

        // The counts match the export.
        let exported = try jsonLines(try replayOK(["export", "--store", store]).stdout)
        var types: [String: Int] = [:]
        for e in exported { types[e["type"] as! String, default: 0] += 1 }
        #expect(types == perType)

        let text = try replayOK(["stats", "--store", store])
        let lines = text.stdoutLines
        #expect(lines.first?.hasPrefix("last position \(last) · view checkpoint \(last) · data.mdb \(fileBytes) bytes") == true,
                "\(text)")
        let typeHeader = try #require(lines.firstIndex(of: "events per type:"))
        let readerHeader = try #require(lines.firstIndex(of: "events per reader:"))
        #expect(readerHeader - typeHeader - 1 == perType.count)
        #expect(lines.count - readerHeader - 1 == perReader.count)
        for (type, count) in perType { #expect(lines.contains("  \(type): \(count)")) }
        for (reader, count) in perReader { #expect(lines.contains("  \(reader): \(count)")) }
        // Most frequent type first.
        let typeCounts = lines[(typeHeader + 1)..<readerHeader].map { Int($0.split(separator: " ").last ?? "") ?? -1 }
        #expect(typeCounts == typeCounts.sorted(by: >))
    }
}

@Suite("replay bad input")
struct BadInputTests {
    static let readCommands: [[String]] = [["show"], ["rebuild"], ["verify"], ["audit"], ["export"], ["stats"], ["backup", "/tmp/replay-never-used-backup-dest"]]

    @Test("a missing store is exit 1 with one stderr line, and nothing is created", arguments: BadInputTests.readCommands)
    func missingStore(command: [String]) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let missing = temp.path("nonexistent/x")
        let run = try replay(command + ["--store", missing])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1, "\(run)")
        #expect(run.stderr.contains("no store at \(missing)"))
        #expect(run.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: temp.path("nonexistent")))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/replay-never-used-backup-dest"))
    }

    @Test("show --store /nonexistent/x is exit 1 with one stderr line")
    func nonexistentRootPath() throws {
        let run = try replay(["show", "--store", "/nonexistent/x"])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains("/nonexistent/x"))
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent"))
    }

    @Test("a directory that is not a store is exit 1 with a clear message, and is left unchanged",
          arguments: BadInputTests.readCommands + [["demo", "--quiet", "--readers", "1", "--days", "3"], ["import", "EMPTY-FILE"]])
    func notAStore(command: [String]) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let directory = temp.child("not-a-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var random = [UInt8](repeating: 0, count: 4096)
        for i in random.indices { random[i] = UInt8.random(in: 0...255) }
        try Data(random).write(to: directory.appendingPathComponent("photo.raw"))
        let before = try snapshot(of: directory)
        let empty = temp.child("empty.jsonl")
        try Data().write(to: empty)
        let arguments = command.map { $0 == "EMPTY-FILE" ? empty.path : $0 }
        let run = try replay(arguments + ["--store", directory.path])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1, "\(run)")
        // A directory without a data file is no store (issue 24: nothing is created in it).
        #expect(run.stderr.contains("is not an event store") || run.stderr.contains("no store at"), "\(run)")
        #expect(try snapshot(of: directory) == before)
    }

    @Test("a data.mdb that is not LMDB is refused and left unchanged")
    func garbageDataFile() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let directory = temp.child("fake")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data((0..<8192).map { _ in UInt8.random(in: 0...255) }).write(to: directory.appendingPathComponent("data.mdb"))
        let before = try snapshot(of: directory)
        for command in [["verify"], ["stats"], ["demo", "--quiet", "--readers", "1", "--days", "3"]] {
            let run = try replay(command + ["--store", directory.path])
            #expect(run.status == 1, "\(run)")
            #expect(run.stderrLines.count == 1, "\(run)")
            #expect(run.stderr.contains(directory.lastPathComponent))
            #expect(try snapshot(of: directory) == before, "\(command)")
        }
    }

    @Test("a store path that is a file is exit 1")
    func storeIsAFile() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let file = temp.child("file")
        try Data("hello".utf8).write(to: file)
        let run = try replay(["stats", "--store", file.path])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1)
        #expect(try Data(contentsOf: file) == Data("hello".utf8))
    }

    @Test("unknown subcommands and options are usage errors (64)",
          arguments: [["frobnicate"], ["show", "--frobnicate"], ["stats", "--json", "extra"], ["rebuild", "--view"],
                      ["demo", "--readers", "two"], ["verify", "--store"]])
    func usageErrors(arguments: [String]) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let run = try replay(arguments, currentDirectory: temp.url)
        #expect(run.status == 64, "\(run)")
        #expect(run.stderr.hasPrefix("Error: "), "\(run)")
        #expect(run.stdout.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: temp.url.path).isEmpty, "no ./reading-store created")
    }

    @Test("--help of every subcommand exits 0 and mentions --store",
          arguments: ["demo", "rebuild", "verify", "audit", "show", "export", "import", "backup", "stats"])
    func help(subcommand: String) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let run = try replay([subcommand, "--help"], currentDirectory: temp.url)
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout.contains("--store"))
        #expect(run.stdout.contains("USAGE: replay \(subcommand)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temp.url.path).isEmpty)
        let viaHelp = try replay(["help", subcommand], currentDirectory: temp.url)
        #expect(viaHelp.status == 0)
        #expect(viaHelp.stdout.contains("--store"))
    }

    @Test("replay --help lists every subcommand; --version prints it")
    func topLevelHelp() throws {
        let run = try replay(["--help"])
        #expect(run.status == 0, "\(run)")
        for name in ["demo", "rebuild", "verify", "audit", "show", "export", "import", "backup", "stats"] {
            #expect(run.stdout.contains("  \(name) "), "\(name)")
        }
        #expect(run.stdout.contains("--store"))
        let version = try replay(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout == "0.1.0\n")
        let bare = try replay([])
        #expect(bare.status == 0, "no subcommand prints the help: \(bare)")
        #expect(bare.stdout.contains("SUBCOMMANDS"))
    }
}
