import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 36: one write transaction for a whole import kept every page it wrote in memory (LMDB
/// holds up to 512 MiB of them), so no import of a large file stayed within 512 MiB. `import` and
/// `import-from` now commit a file of more than `--events-per-commit` events in parts, each whole,
/// in file order: a kill between parts leaves the parts before it, and importing the same file
/// again adds the rest, to the same views as an import that never stopped.
@Suite struct ImportPartsCLITests {
    typealias H = HardeningCLITests

    /// The last position `replay stats` shows for `store`, or nil when it cannot be read (yet).
    static func lastPosition(_ store: String) -> Int? {
        guard let run = try? replayRaw(["stats", "--store", store]), run.status == 0,
              let line = String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").first(where: { $0.hasPrefix("last position ") }),
              let number = line.dropFirst("last position ".count).split(separator: " ").first else { return nil }
        return Int(number)
    }

    /// The views digest `replay verify` prints for `store`.
    static func digest(_ store: String) throws -> String {
        let run = try replayOK(["verify", "--store", store])
        return try #require(run.stdoutLines.first { $0.hasPrefix("views digest ") }, "\(run)")
    }

    /// A history exported as JSON Lines (lines with their origins, as `export` writes them).
    static func exportedHistory(in dir: CLITempDirectory) throws -> (file: String, lines: Int) {
        let demo = dir.path("demo")
        try replayOK(["demo", "--readers", "1", "--days", "90", "--seed", "36", "--quiet", "--store", demo])
        let file = dir.path("history.jsonl")
        let export = try replayOK(["export", "--store", demo])
        try export.stdoutData.write(to: URL(fileURLWithPath: file))
        return (file, export.stdoutLines.count)
    }

    @Test func aKilledPartedImportIsFinishedByImportingAgain() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let (file, lines) = try Self.exportedHistory(in: dir)
        try #require(lines > 100)
        let reference = dir.path("reference")
        try replayOK(["import", "--store", reference, file])

        // One event a part, so that the kill lands between parts; a run that ends before the kill
        // is tried again on a fresh store.
        var killedAt: Int?
        var store = ""
        for attempt in 1...3 where killedAt == nil {
            store = dir.path("store-\(attempt)")
            let process = Process()
            process.executableURL = try replayExecutable.get()
            process.arguments = ["import", "--store", store, "--events-per-commit", "1", file]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            while process.isRunning {
                if let last = Self.lastPosition(store), last > 0 {
                    kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                    if process.terminationReason == .uncaughtSignal { killedAt = last }
                    break
                }
                usleep(20_000)
            }
            process.waitUntilExit()
        }
        let seen = try #require(killedAt, "every parted import ended before the kill")
        // The parts committed are a prefix of the file, each whole; none after the kill.
        let stored = try #require(Self.lastPosition(store))
        #expect(stored >= seen && stored < lines, "stored \(stored) of \(lines)")

        let again = try replayOK(["import", "--store", store, file])
        #expect(again.stdout.contains("imported \(lines - stored) new events of \(lines)"), "\(again)")
        #expect(again.stdout.contains("(\(stored) already stored)"), "\(again)")
        #expect(try Self.digest(store) == Self.digest(reference))
        #expect(Self.lastPosition(store) == lines)
    }

    @Test func aRefusalInALaterPartNamesWhatEarlierPartsImported() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let store = dir.path("store")
        // The store holds one event; the file repeats its ID with another fact on line 9, which
        // only the store's pass can see (the check pass before it has no store).
        let heldID = UUID().uuidString.lowercased()
        try H.importLines([try H.bookAdded(book: H.book, id: heldID)], into: store, in: dir, name: "held.jsonl")
        let other = UUID().uuidString.lowercased()
        var lines = [try H.bookAdded(book: other)]
        for page in 1...10 { lines.append(try H.pagesRead(page * 10, book: other)) }
        let clean = lines
        lines.insert(try H.bookAdded(title: "Another title", book: H.book, id: heldID), at: 8)
        let file = dir.child("in.jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)

        let run = try replay(["import", "--store", store, "--events-per-commit", "3", file.path])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("line 9"), "\(run)")
        #expect(run.stderr.contains("the first 6 of 12 events (through line 6) were imported in earlier parts, each whole, and nothing after them"), "\(run)")
        #expect(Self.lastPosition(store) == 1 + 6)

        // Corrected, the file imports: the six stored are skipped, the rest added.
        try Data((clean.joined(separator: "\n") + "\n").utf8).write(to: file)
        let again = try replayOK(["import", "--store", store, "--events-per-commit", "3", file.path])
        #expect(again.stdout.contains("imported 5 new events of 11"), "\(again)")
        #expect(again.stdout.contains("(6 already stored, committed in 4 parts)"), "\(again)")
        #expect(Self.lastPosition(store) == 1 + 11)
    }

    @Test func eventsPerCommitBelowOneIsRefused() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let run = try replay(["import", "--store", dir.path("store"), "--events-per-commit", "0", dir.path("none.jsonl")])
        #expect(run.status != 0)
        #expect(run.stderr.contains("--events-per-commit 0 is below 1"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("store")))
    }
}
