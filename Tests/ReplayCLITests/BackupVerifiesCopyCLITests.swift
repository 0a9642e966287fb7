import Foundation
import ReadingEvents
import TestSupport
import Testing

/// `replay backup` of a store with one flipped bit (seeded trials): it either writes a copy that
/// holds every event of the store (`export` of the copy gives exactly the store's events) or
/// fails with one line and leaves nothing at the destination. Before, 45 of 60 such trials exited
/// 0 with a copy that held no events (issue 36, finding 6).
/// `BACKUP_FLIP_TRIALS` sets the number of trials (CI: 12; `Scripts/stress.sh long`: 300).
@Suite struct BackupVerifiesCopyCLITests {
    @Test func aBackupOfADamagedStoreIsUsableOrRefused() throws {
        let trials = ProcessInfo.processInfo.environment["BACKUP_FLIP_TRIALS"].flatMap(Int.init) ?? 12
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let original = dir.path("original")
        try makeDemoStore(at: original)
        let reference = try replayOK(["export", "--store", original]).stdoutLines
        let data = try Data(contentsOf: dir.child("original").appendingPathComponent("data.mdb"))
        var rng = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["RELIABILITY_SEED"].flatMap(Int.init) ?? 0xB4C_0036))
        var outcomes: [String: Int] = [:]
        for trial in 0..<trials {
            var bytes = [UInt8](data)
            // The first 2 pages are LMDB's meta pages; flip a bit in the pages after them.
            let offset = Int.random(in: 8192..<bytes.count, using: &rng)
            bytes[offset] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
            let copy = dir.child("damaged-\(trial)")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            try Data(bytes).write(to: copy.appendingPathComponent("data.mdb"))
            let destination = dir.path("backup-\(trial)")
            let backup = try replayRaw(["backup", "--store", copy.path, destination])
            if backup.died {
                let lmdb = ReliabilityCLITests.lmdbCrash(backup)
                #expect(lmdb != nil, "trial \(trial) (byte \(offset)): backup killed by signal \(backup.status) outside LMDB: \(backup.stderr.prefix(300))")
                outcomes["backup died in LMDB", default: 0] += 1
            } else if backup.status == 0 {
                let export = try replay(["export", "--store", destination])
                #expect(export.status == 0 && export.stdoutLines == reference,
                        "trial \(trial) (byte \(offset)): backup exited 0 but its copy exports \(export.stdoutLines.count) of \(reference.count) events: \(export.stderr.prefix(300))")
                outcomes["backup ok, copy complete", default: 0] += 1
            } else {
                let errorLines = backup.stderr.split(separator: "\n")
                #expect(errorLines.count == 1, "trial \(trial): \(backup.stderr)")
                outcomes["backup refused", default: 0] += 1
            }
            if backup.status != 0 || backup.died {
                #expect(!FileManager.default.fileExists(atPath: destination), "trial \(trial): a failed backup left \(destination)")
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(".backup-\(trial)") }
                #expect(leftovers.isEmpty || backup.died, "trial \(trial): temporary directories left: \(leftovers)")
            }
            try? FileManager.default.removeItem(at: copy)
            try? FileManager.default.removeItem(atPath: destination)
        }
        print("RELIABILITY backup flips: \(trials) trials; " + outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
    }
}
