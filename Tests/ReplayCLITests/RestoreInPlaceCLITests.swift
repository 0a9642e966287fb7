import Foundation
import ReadingEvents
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A backup restored over the store by `cp`, `cat >`, `tar x` or `unzip -o` (real processes),
/// then `replay sync --with` the store's peer (issue 36, finding 1). Before: the restored store
/// issued its replica's sequences again, the sync moved nothing of the lost time nor of the new
/// events, and it failed with a false cause ("events without an origin").
@Suite("replay sync after a restore in place")
struct RestoreInPlaceCLITests {
    enum Form: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case cpFile, catOver, tarExtract, unzipOverwrite
        var testDescription: String { rawValue }
    }

    static func shell(_ command: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "`\(command)` exited \(process.terminationStatus)")
    }

    static func ids(_ store: String) throws -> Set<String> {
        Set(try jsonLines(try replayOK(["export", "--store", store]).stdout).compactMap { $0["eventID"] as? String })
    }

    @Test(arguments: Form.allCases)
    func aRestoredStoreSyncsWithNothingLost(form: Form) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let a = temp.path("a"), b = temp.path("b"), backup = temp.path("backup")
        try replayOK(["demo", "--store", a, "--readers", "1", "--days", "8", "--seed", "11", "--quiet"])
        try replayOK(["demo", "--store", b, "--readers", "1", "--days", "8", "--seed", "12", "--quiet"])
        try replayOK(["sync", "--store", a, "--with", b])
        try Self.shell("cp -r '\(a)' '\(backup)'")
        // Written after the backup and synced: the lost time, which only b holds afterwards.
        try replayOK(["demo", "--store", a, "--readers", "1", "--days", "4", "--seed", "13", "--quiet"])
        try replayOK(["sync", "--store", a, "--with", b])
        let lost = try Self.ids(a)
        let inode = { try FileManager.default.attributesOfItem(atPath: a + "/data.mdb")[.systemFileNumber] as? NSNumber }
        let inodeBefore = try inode()
        switch form {
        case .cpFile: try Self.shell("cp '\(backup)/data.mdb' '\(a)/data.mdb'")
        case .catOver: try Self.shell("cat '\(backup)/data.mdb' > '\(a)/data.mdb'")
        case .tarExtract: try Self.shell("tar -C '\(backup)' -cf '\(temp.path("bk.tar"))' . && tar -C '\(a)' --overwrite -xf '\(temp.path("bk.tar"))'")
        case .unzipOverwrite: try Self.shell("cd '\(backup)' && zip -q -r '\(temp.path("bk.zip"))' . && cd '\(a)' && unzip -q -o '\(temp.path("bk.zip"))'")
        }
        // New events on the restored store, under sequences it issued before.
        try replayOK(["demo", "--store", a, "--readers", "1", "--days", "3", "--seed", "14", "--quiet"])
        let expected = lost.union(try Self.ids(a))
        let synced = try replay(["sync", "--store", a, "--with", b])
        #expect(synced.status == 0, "\(synced)")
        // Where the restore kept the inode, the sync tells; where it made a new file (`unzip -o`
        // replaces files), the open did already.
        let keptInode = try inode() == inodeBefore
        #expect(synced.stdout.contains("restored from a backup or copied") == keptInode, "inode kept: \(keptInode); \(synced)")
        #expect(synced.stdout.contains("views: equal"), "\(synced)")
        for store in [a, b] {
            let held = try Self.ids(store)
            #expect(held == expected, "\(store): \(held.symmetricDifference(expected).count) differ")
            let verify = try replay(["verify", "--store", store])
            #expect(verify.status == 0, "\(verify)")
        }
        let again = try replayOK(["sync", "--store", b, "--with", a])
        #expect(again.stdoutLines[0].hasSuffix(": 0 received: 0 new, 0 already held, 0 books refolded"), "\(again)")
    }

    /// `replay sync --with` after a restore in place, killed (SIGKILL) at a seeded moment, then
    /// run again: the switch to a new replica is one transaction, so nothing is lost or doubled
    /// wherever the kill lands. `RESTORE_KILL_TRIALS` trials (CI: 4).
    @Test func aSyncKilledDuringTheSwitchLosesNothing() throws {
        let trials = ProcessInfo.processInfo.environment["RESTORE_KILL_TRIALS"].flatMap(Int.init) ?? 4
        var rng = SplitMix64(seed: 0x36_0001)
        for trial in 0..<trials {
            let temp = try CLITempDirectory()
            defer { temp.remove() }
            let a = temp.path("a"), b = temp.path("b"), backup = temp.path("backup")
            try replayOK(["demo", "--store", a, "--readers", "1", "--days", "8", "--seed", "21", "--quiet"])
            try replayOK(["demo", "--store", b, "--readers", "1", "--days", "8", "--seed", "22", "--quiet"])
            try replayOK(["sync", "--store", a, "--with", b])
            try Self.shell("cp -r '\(a)' '\(backup)'")
            try replayOK(["demo", "--store", a, "--readers", "1", "--days", "4", "--seed", "23", "--quiet"])
            try replayOK(["sync", "--store", a, "--with", b])
            let lost = try Self.ids(a)
            try Self.shell("cat '\(backup)/data.mdb' > '\(a)/data.mdb'")
            try replayOK(["demo", "--store", a, "--readers", "1", "--days", "3", "--seed", "24", "--quiet"])
            let expected = lost.union(try Self.ids(a))
            let process = Process()
            process.executableURL = try replayExecutable.get()
            process.arguments = ["sync", "--store", a, "--with", b]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let delay = UInt32.random(in: 0...400_000, using: &rng)
            usleep(delay)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let synced = try replay(["sync", "--store", a, "--with", b])
            #expect(synced.status == 0, "trial \(trial) (killed after \(delay) µs): \(synced)")
            #expect(synced.stdout.contains("views: equal"), "trial \(trial): \(synced)")
            for store in [a, b] {
                let held = try Self.ids(store)
                #expect(held == expected, "trial \(trial) (killed after \(delay) µs): \(store): \(held.symmetricDifference(expected).count) differ")
                let verify = try replay(["verify", "--store", store])
                #expect(verify.status == 0, "trial \(trial): \(verify)")
            }
        }
    }
}
