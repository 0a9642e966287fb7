@_spi(RawLog) import EventStoreLMDB
import Foundation
import TestSupport
import ReadingEvents
import Testing

#if canImport(Glibc)
import Glibc
#endif

private func envInt(_ name: String, _ ciDefault: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? ciDefault
}

private func lines(_ data: Data) -> [String] {
    String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
}

/// Damage, tampering, bad input and privacy through the `replay` binary.
@Suite(.serialized) struct ReliabilityCLITests {
    // MARK: 2. random damage to copies of data.mdb

    @Test func damagedCopiesNeverCrashVerifyNorReturnAWrongEvent() throws {
        let trials = envInt("RELIABILITY_DAMAGE_TRIALS", 40)
        // LMDB 0.9.24 has no page checksums: a damaged B-tree page can trip one of its own
        // assertions (abort, e.g. "mdb.c:5921: Assertion 'IS_LEAF(mp)' failed in mdb_cursor_next()")
        // or make it read outside the page (SIGSEGV inside liblmdb). Those deaths are counted and
        // reported; any other signal (a Swift trap in this project's code) fails the test.
        // RELIABILITY_DAMAGE_STRICT=1 fails on LMDB's deaths too.
        let strict = envInt("RELIABILITY_DAMAGE_STRICT", 0) != 0
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let original = dir.path("original")
        try makeDemoStore(at: original)
        let reference = try replayOK(["export", "--store", original])
        let referenceLines = Set(lines(reference.stdoutData))
        #expect(!referenceLines.isEmpty)
        let data = try Data(contentsOf: dir.child("original").appendingPathComponent("data.mdb"))
        let pages = data.count / 4096
        var rng = SplitMix64(seed: UInt64(envInt("RELIABILITY_SEED", 0xDA_AA6E)))
        var outcomes: [String: Int] = [:]
        var signals: [String] = []
        var wrongEvents = 0, exportedEvents = 0
        let clock = ContinuousClock()
        let started = clock.now
        for trial in 0..<trials {
            var bytes = [UInt8](data)
            let kind: String
            if trial % 2 == 0 {
                let n = Int.random(in: 1...16, using: &rng)
                for _ in 0..<n { bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng) }
                kind = "bytes(\(n))"
            } else {
                let page = Int.random(in: 0..<pages, using: &rng)
                let zero = Bool.random(using: &rng)
                for i in (page * 4096)..<((page + 1) * 4096) { bytes[i] = zero ? 0 : UInt8.random(in: 0...255, using: &rng) }
                kind = "page \(page) \(zero ? "zeroed" : "random")"
            }
            let copy = dir.child("copy-\(trial)")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            try Data(bytes).write(to: copy.appendingPathComponent("data.mdb"))
            defer { try? FileManager.default.removeItem(at: copy) }

            let verify = try replayRaw(["verify", "--store", copy.path, "--json"])
            let outcome: String
            if verify.died {
                let lmdb = Self.lmdbCrash(verify)
                outcome = "verify killed by signal \(verify.status)" + (lmdb.map { " (\($0))" } ?? " (NOT in LMDB)")
                if lmdb == nil || strict {
                    signals.append("trial \(trial) \(kind): verify signal \(verify.status): \(verify.stderr.prefix(300))")
                }
            } else if verify.status == 0 {
                outcome = "verify ok (damage in unused space)"
            } else if verify.status == 1, !verify.stdout.isEmpty {
                outcome = "verify exit 1 with fault report"
            } else if verify.status == 1, !verify.stderr.isEmpty {
                outcome = "verify exit 1 with an error"
            } else {
                outcome = "verify exit \(verify.status) (unexpected)"
                Issue.record("trial \(trial) \(kind): verify exit \(verify.status): \(verify.stderr)")
            }
            outcomes[outcome, default: 0] += 1

            let export = try replayRaw(["export", "--store", copy.path])
            if export.died {
                let lmdb = Self.lmdbCrash(export)
                outcomes["export killed by signal \(export.status)" + (lmdb.map { " (\($0))" } ?? " (NOT in LMDB)"), default: 0] += 1
                if lmdb == nil || strict {
                    signals.append("trial \(trial) \(kind): export signal \(export.status): \(export.stderr.prefix(300))")
                }
            } else {
                #expect(export.status == 0 || export.status == 1, "trial \(trial) \(kind): export exit \(export.status)")
                outcomes["export exit \(export.status)", default: 0] += 1
            }
            let exported = lines(export.stdout)
            exportedEvents += exported.count
            let wrong = exported.filter { !referenceLines.contains($0) }
            wrongEvents += wrong.count
            #expect(wrong.isEmpty, "trial \(trial) \(kind): export returned events that differ from the original: \(wrong.prefix(1))")
            if verify.status == 0, !verify.died, export.status == 0 {
                #expect(Set(exported) == referenceLines, "trial \(trial) \(kind): verify passed but export differs")
            }
        }
        #expect(signals.isEmpty, "\(signals.count) runs died by a signal outside LMDB: \(signals.prefix(5))")
        let figures = outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        print("RELIABILITY damage: \(trials) trials on a \(data.count)-byte data.mdb (\(pages) pages) in \(started.duration(to: clock.now)); \(figures); \(exportedEvents) events exported from damaged copies, \(wrongEvents) wrong; \(signals.count) signal deaths outside LMDB")
        for line in signals.prefix(10) { print("RELIABILITY damage signal: \(line)") }
    }

    /// "LMDB assertion" or "LMDB memory fault" when the child died inside liblmdb, else nil.
    static func lmdbCrash(_ run: RawReplayRun) -> String? {
        if run.status == SIGABRT, run.stderr.contains("mdb.c:"), run.stderr.contains("Assertion") {
            let line = run.stderr.split(separator: "\n").first { $0.contains("mdb.c:") }.map(String.init) ?? ""
            return "LMDB assertion: \(line.split(separator: " ").prefix(3).joined(separator: " "))"
        }
        if run.status == SIGSEGV || run.status == SIGBUS, run.stderr.contains("liblmdb") {
            return "LMDB memory fault"
        }
        return nil
    }

    // MARK: 7. tampering found by `replay verify`

    @Test func verifyNamesTheFirstBadPositionOfATamperedRecord() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let original = dir.path("original")
        let last = try makeDemoStore(at: original)
        #expect(last > 20)
        for (name, position) in [("edited", UInt64(13)), ("deleted", UInt64(17)), ("swapped", UInt64(9))] {
            let copy = dir.child(name)
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: dir.child("original").appendingPathComponent("data.mdb"), to: copy.appendingPathComponent("data.mdb"))
            do {
                let log = try EventLog.open(at: copy)
                let raw = try log.environment.openDatabase(named: "events", keys: BigEndianUInt64.self, values: RawBytes.self, create: false)
                try log.environment.write { txn in
                    switch name {
                    case "edited":
                        var bytes = try #require(try txn.get(raw, position))
                        bytes[bytes.count - 2] ^= 0x20
                        try txn.put(raw, position, bytes)
                    case "deleted":
                        #expect(try txn.delete(raw, position))
                    default:
                        let a = try #require(try txn.get(raw, position)), b = try #require(try txn.get(raw, position + 1))
                        try txn.put(raw, position, b)
                        try txn.put(raw, position + 1, a)
                    }
                }
            }
            let run = try replay(["verify", "--store", copy.path])
            #expect(run.status == 1, "\(name): \(run)")
            let expected = name == "deleted" ? position + 1 : position
            #expect(run.stdout.contains("fault at position \(expected):"), "\(name): \(run.stdout.prefix(400))")
            #expect(run.stderr.contains("the first at position \(expected)"), "\(name): \(run.stderr)")
            let json = try replay(["verify", "--store", copy.path, "--json"])
            #expect(json.status == 1)
            let object = try json.jsonObject()
            #expect(object["ok"] as? Bool == false)
            let faults = try #require(object["faults"] as? [[String: Any]])
            #expect(faults.compactMap { ($0["position"] as? NSNumber)?.uint64Value }.min() == expected, "\(name)")
        }
    }

    // MARK: 4. bad input through the CLI

    @Test func malformedImportLinesAreRejectedWithTheirLineAndChangeNothing() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try makeDemoStore(at: store)
        let exported = lines(try replayOK(["export", "--store", store]).stdoutData)
        let template = try #require(exported.first { $0.contains("\"PagesRead\"") } ?? exported.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(template.utf8)) as? [String: Any])
        func variant(_ change: (inout [String: Any]) -> Void) throws -> Data {
            var copy = object
            copy["eventID"] = UUID().uuidString
            change(&copy)
            return try JSONSerialization.data(withJSONObject: copy)
        }
        let isbnLine = exported.first { $0.contains("\"isbn13\":\"") }
        var cases: [(String, Data)] = [
            ("not JSON", Data("this is not json".utf8)),
            ("truncated", Data(template.utf8.prefix(template.utf8.count / 2))),
            ("array", Data("[1,2,3]".utf8)),
            ("invalid UTF-8", Data(template.utf8.prefix(20)) + Data([0xFF, 0xFE, 0xC0, 0x80]) + Data(template.utf8.dropFirst(20))),
            ("wrong type: reader is a number", try variant { $0["reader"] = 42 }),
            ("wrong type: occurredAt is an array", try variant { $0["occurredAt"] = [1] }),
            ("missing eventID", try variant { $0.removeValue(forKey: "eventID") }),
            ("unknown time zone", try variant { $0["timeZone"] = "Mars/Olympus_Mons" }),
            ("year 1", try variant { $0["occurredAt"] = "0001-01-01T00:00:00.000000Z" }),
            ("year 9999", try variant { $0["occurredAt"] = "9999-12-31T23:59:59.000000Z" }),
            ("1 MB sentence", try variant { copy in
                copy["type"] = "SentenceCollected"
                var data = (copy["data"] as? [String: Any]) ?? [:]
                data["sentence"] = UUID().uuidString
                data["text"] = String(repeating: "a", count: 1 << 20)
                data.removeValue(forKey: "position")
                copy["data"] = data
            }),
        ]
        if let isbnLine, var withISBN = try JSONSerialization.jsonObject(with: Data(isbnLine.utf8)) as? [String: Any] {
            withISBN["eventID"] = UUID().uuidString
            var data = withISBN["data"] as! [String: Any]
            var metadata = data["metadata"] as! [String: Any]
            let isbn = metadata["isbn13"] as! String
            metadata["isbn13"] = String(isbn.dropLast()) + (isbn.last == "0" ? "1" : "0")
            data["metadata"] = metadata
            withISBN["data"] = data
            cases.append(("bad ISBN check digit", try JSONSerialization.data(withJSONObject: withISBN)))
        }
        let before = try snapshot(of: URL(fileURLWithPath: store))
        for (label, bad) in cases {
            // The bad line is line 3 of a file whose other lines are valid new-looking events.
            let file = dir.child("bad.jsonl")
            var content = Data(exported[0].utf8) + Data("\n".utf8) + Data(exported[1].utf8) + Data("\n".utf8)
            content += bad + Data("\n".utf8)
            try content.write(to: file)
            let run = try replay(["import", "--store", store, file.path])
            #expect(run.status == 1, "\(label): \(run)")
            #expect(run.stderr.contains("line 3"), "\(label): \(run.stderr.prefix(300))")
            #expect(run.stderr.contains("nothing was imported"), "\(label)")
            #expect(!run.stderr.contains("Fatal error"), "\(label)")
            #expect(run.stderr.count < 2_000, "\(label): the error is not one clear line")
        }
        #expect(try snapshot(of: URL(fileURLWithPath: store)) == before, "a rejected import changed the store's files")
        print("RELIABILITY bad-input CLI: \(cases.count) malformed import lines rejected with their line number, files byte-identical")
    }

    // MARK: 8. privacy through the CLI

    @Test func exportOfOneReaderHoldsOnlyThatReaderAndFilesArePrivate() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        try makeDemoStore(at: store)
        #expect(try permissionsOf(store) == 0o700)
        #expect(try permissionsOf(store + "/data.mdb") == 0o600)
        #expect(try permissionsOf(store + "/lock.mdb") == 0o600)
        let all = try jsonLines(try replayOK(["export", "--store", store]).stdout)
        let readers = Set(all.compactMap { $0["reader"] as? String })
        #expect(readers.count == 2)
        var total = 0
        for reader in readers {
            let mine = try jsonLines(try replayOK(["export", "--store", store, "--reader", reader]).stdout)
            #expect(!mine.isEmpty)
            #expect(mine.allSatisfy { $0["reader"] as? String == reader })
            #expect(mine.count == all.filter { $0["reader"] as? String == reader }.count)
            total += mine.count
        }
        #expect(total == all.count)
        let unknown = try jsonLines(try replayOK(["export", "--store", store, "--reader", UUID().uuidString]).stdout)
        #expect(unknown.isEmpty)
    }

    private func permissionsOf(_ path: String) throws -> Int {
        ((try FileManager.default.attributesOfItem(atPath: path))[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}
