import DemoHistory
import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing
@_spi(RawLog) @testable import EventStoreLMDB

#if canImport(Glibc)
import Glibc
#endif

/// What hostile testing broke in the store (issue "Hardening"): two lock files for one data
/// file, two rebuilds at once, short data files, backups and directory modes, read-only opens.
@Suite struct StoreHardeningTests {
    // MARK: Two lock files for one data file

    /// A writer process appends while `lock.mdb` is deleted; a second process then opens the same
    /// store (and gets a new lock file). Before the data-file locks, both wrote, each on the last
    /// commit *it* had seen, and acknowledged events of one of them were gone while `verify`
    /// passed. `RELIABILITY_LOCKFILE_TRIALS` (CI 3; `Scripts/stress.sh long` 100) sets the trials.
    @Test func deletingTheLockFileUnderAWriterLosesNoAcknowledgedEvent() async throws {
        let trials = Reliability.int("RELIABILITY_LOCKFILE_TRIALS", 3)
        var refused = 0, acknowledged = 0, overlapping = 0
        for trial in 0..<trials {
            try await withTempDirectory { dir in
                let url = dir.child("store")
                _ = try EventLog.open(at: url)   // create it, then release it
                let first = try HelperProcess(["append-batches", url.path, "--count", "200000", "--batch", "10", "--prefix", "a", "--stream", "a"])
                #expect(await first.waitForLine(timeout: .seconds(30)) { !$0.isEmpty })
                #expect(unlink(url.appendingPathComponent("lock.mdb").path) == 0)
                let second = try HelperProcess(["append-batches", url.path, "--count", "300", "--batch", "10", "--prefix", "b", "--stream", "b"])
                let secondStatus = second.waitForExit()
                let firstStillRan = first.process.isRunning
                first.kill9()
                first.waitForExit()
                // The first writer was running all along: the second must have been refused at open.
                if firstStillRan {
                    overlapping += 1
                    #expect(secondStatus != 0, "trial \(trial): a second writer with its own lock file was allowed to write")
                    #expect(second.lines.isEmpty)
                }
                if secondStatus != 0 { refused += 1 }
                let log = try EventLog.open(at: url)
                let acknowledgedA = first.lines.count * 10, acknowledgedB = second.lines.count * 10
                acknowledged += acknowledgedA + acknowledgedB
                #expect(acknowledgedA > 0)
                for (prefix, count) in [("a", acknowledgedA), ("b", acknowledgedB)] {
                    for i in 0..<count where try log.event(withID: deterministicID(prefix: prefix, index: i)) == nil {
                        Issue.record("trial \(trial): acknowledged event \(prefix)-\(i) (of \(count)) is missing")
                        break
                    }
                }
                let report = try log.verify()
                #expect(report.isIntact, "trial \(trial): \(report.faults.prefix(3))")
                #expect(report.recordCount == UInt64(try log.lastPosition()))
            }
        }
        Reliability.report("lock-file", "\(trials) trials of lock.mdb deleted under a writer, then a second writer: \(overlapping) overlapping, \(refused) second writers refused at open, \(acknowledged) acknowledged events, 0 missing, chain intact")
    }

    /// The same `data.mdb` reached through a second directory (a symbolic link to it) is refused
    /// while another process has the store open, and also once that process is gone: a store's
    /// files are never links (issue 36, finding 7; before, it opened once the process was gone).
    @Test func aSecondDirectoryWithItsOwnLockFileIsRefusedWhileTheStoreIsOpen() async throws {
        try await withTempDirectory { dir in
            let url = dir.child("store")
            do {
                let log = try EventLog.open(at: url)
                try log.append([NewEvent(eventID: UUID(), payload: [1, 2, 3])], to: "s")
            }
            let alias = dir.child("alias")
            try FileManager.default.createDirectory(at: alias, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(at: alias.appendingPathComponent("data.mdb"),
                                                       withDestinationURL: url.appendingPathComponent("data.mdb"))
            let holder = try HelperProcess(["hold-snapshot", url.path])
            #expect(await holder.waitForLine(timeout: .seconds(30)) { $0 == "holding" })
            #expect {
                _ = try EventLog.open(at: alias)
            } throws: { error in
                guard let lmdb = error as? LMDBError, lmdb.kind == .invalidFile else { return false }
                return lmdb.description.contains("data.mdb is a symbolic link")
            }
            // Nothing was left behind by the refused open: no new lock file in the alias.
            #expect(!FileManager.default.fileExists(atPath: alias.appendingPathComponent("lock.mdb").path))
            holder.kill9()
            holder.waitForExit()
            #expect { _ = try EventLog.open(at: alias) } throws: { ($0 as? LMDBError)?.kind == .invalidFile }
            let log = try EventLog.open(at: url)
            #expect(try log.lastPosition() == 1)
        }
    }

    /// In one process too: a data file reached through a link is refused (before the links
    /// rule, the file locks refused it as a second lock file).
    @Test func oneProcessCannotOpenOneDataFileThroughTwoLockFiles() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let log = try EventLog.open(at: url)
            let alias = dir.child("alias")
            try FileManager.default.createDirectory(at: alias, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(at: alias.appendingPathComponent("data.mdb"),
                                                       withDestinationURL: url.appendingPathComponent("data.mdb"))
            #expect { _ = try EventLog.open(at: alias) } throws: { ($0 as? LMDBError)?.kind == .invalidFile }
            try log.append([NewEvent(eventID: UUID(), payload: [1])], to: "s")
            #expect(try log.lastPosition() == 1)
        }
    }

    // MARK: Two rebuilds at once

    /// A rebuild started while another runs (in this process, or in another one) is refused and
    /// writes nothing; the first one's views and counts are true.
    @Test func aSecondRebuildIsRefusedInThisAndInAnotherProcess() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let store = try ReadingStore.open(at: url)
            let history = DemoHistory.generate(.init(readers: 2, days: 60, seed: 7))
            try store.appendRecorded(history)
            let expected = try store.freshFoldDigest()
            var inProcess: Error?
            var child: (status: Int32, lines: [String])?
            let report = try store.rebuild { _, _ in
                guard child == nil else { return }
                do { _ = try store.rebuild() } catch { inProcess = error }
                let other = try? HelperProcess(["rebuild-digest", url.path])
                let status = other?.waitForExit() ?? -1
                child = (status, other?.lines ?? [])
            }
            #expect((inProcess as? EventStoreError) == .rebuildInProgress(path: url.path), "\(String(describing: inProcess))")
            let refused = try #require(child)
            #expect(refused.status != 0, "a rebuild in another process ran at the same time: \(refused.lines)")
            #expect(!refused.lines.contains { $0.hasPrefix("rebuilt") })
            #expect(report.events == UInt64(history.count))
            #expect(report.digest == expected)
            #expect(try store.viewDigest() == expected)
            // Once the first is done, a rebuild runs again.
            #expect(try store.rebuild().digest == expected)
        }
    }

    // MARK: Short data files

    /// A data file cut short is refused at open with one clear error, instead of a SIGBUS at the
    /// first read of a missing page. Cut at random lengths, whole pages or not;
    /// `RELIABILITY_SHORTFILE_TRIALS` (CI 24; `Scripts/stress.sh long` 2000) sets how many. A cut
    /// that removes only free pages from the end loses nothing (LMDB never reads a free page): that
    /// copy opens and holds every event of the original (see `FreeTailTests`).
    @Test func aShortDataFileIsRefusedAtOpen() throws {
        let trials = Reliability.int("RELIABILITY_SHORTFILE_TRIALS", 24)
        var rng = SplitMix64(seed: UInt64(Reliability.int("RELIABILITY_SEED", 77)))
        try withTempDirectory { dir in
            let original = dir.child("original")
            do {
                let store = try ReadingStore.open(at: original)
                try store.appendRecorded(DemoHistory.generate(.init(readers: 1, days: 120, seed: 3)))
            }
            let bytes = try Data(contentsOf: original.appendingPathComponent("data.mdb"))
            let events = try ReadingStore.open(at: original, options: LMDBEnvironmentOptions(readOnly: true)).events()
            var refusedAtOpen = 0, openedWhole = 0
            for trial in 0..<trials {
                let url = dir.child("cut-\(trial)")
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                // Half the cuts at a page boundary (a copy cut short, a disk full while growing),
                // half anywhere; never the whole file, never less than the first meta page.
                var length = 200 + Int(rng.next() % UInt64(bytes.count - 200))
                if trial % 2 == 0 { length = max(4096, length / 4096 * 4096) }
                try bytes.prefix(length).write(to: url.appendingPathComponent("data.mdb"))
                for readOnly in [true, false] {
                    do {
                        let store = try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(readOnly: readOnly))
                        #expect(try store.events() == events, "cut at \(length) of \(bytes.count) bytes")
                        if readOnly { openedWhole += 1 }
                    } catch let lmdb as LMDBError where lmdb.kind == .corrupted {
                        #expect(lmdb.description.contains("damaged or incomplete"), "\(lmdb)")
                        if readOnly { refusedAtOpen += 1 }
                    }
                }
                try? FileManager.default.removeItem(at: url)
            }
            Reliability.report("short-file", "\(trials) copies of a \(bytes.count)-byte data.mdb cut short (half at page boundaries): \(refusedAtOpen) refused at open with \"damaged or incomplete\" (writable and read-only), \(openedWhole) cut only free pages and opened with every event, 0 deaths by signal")
            #expect(refusedAtOpen > 0)
        }
    }

    // MARK: Backups and modes

    /// A backup is written under a temporary name and renamed when complete: 0700 directory,
    /// 0600 file whatever the umask, an existing empty destination tightened, nothing left beside.
    @Test func backupsAreWholePrivateAndAtomic() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let history = DemoHistory.generate(.init(readers: 1, days: 30, seed: 5))
            try store.appendRecorded(history)
            let old = umask(0)
            defer { umask(old) }
            let existing = dir.child("backups/empty")
            try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            for destination in [existing, dir.child("backups/new")] {
                let size = try store.log.backup(to: destination)
                #expect(size > 0)
                #expect(try permissions(of: destination) == 0o700)
                #expect(try permissions(of: destination.appendingPathComponent("data.mdb")) == 0o600)
                #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path) == ["data.mdb"])
                let copy = try EventLog.open(at: destination, options: LMDBEnvironmentOptions(readOnly: true))
                #expect(try copy.lastPosition() == UInt64(history.count))
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.child("backups").path).sorted() == ["empty", "new"])
            // A destination that is a file, or not empty, is refused and left alone.
            let file = dir.child("backups/file")
            try Data("x".utf8).write(to: file)
            for bad in [file, existing] {
                #expect { try store.log.backup(to: bad) } throws: {
                    guard case .invalidArgument(let field, _) = $0 as? EventStoreError else { return false }
                    return field == "backup destination"
                }
            }
            #expect(try Data(contentsOf: file) == Data("x".utf8))
        }
    }

    /// A store created in a directory that already exists with a wide mode is made private.
    @Test func aStoreInAnExistingOpenDirectoryIsMadePrivate() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            #expect(chmod(url.path, 0o755) == 0)
            _ = try ReadingStore.open(at: url)
            #expect(try permissions(of: url) == 0o700)
            #expect(try permissions(of: url.appendingPathComponent("data.mdb")) == 0o600)
            #expect(try permissions(of: url.appendingPathComponent("lock.mdb")) == 0o600)
        }
    }

    /// A full disk during a backup is named as such and leaves nothing at the destination, so
    /// the retry (elsewhere, or after freeing space) is not blocked.
    @Test func aBackupOntoAFullDiskLeavesNothingBehind() throws {
        try withTempDirectory { dir in
            guard let mountPoint = try mountTmpfs(in: dir, size: "256k") else { return }
            defer { unmount(mountPoint) }
            let store = try ReadingStore.open(at: dir.child("store"))
            try store.appendRecorded(DemoHistory.generate(.init(readers: 2, days: 120, seed: 9)))
            let destination = mountPoint.appendingPathComponent("backup")
            #expect { try store.log.backup(to: destination) } throws: { error in
                guard let lmdb = error as? LMDBError else { return false }
                return lmdb.kind == .diskFull && lmdb.description.contains("disk is full")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: mountPoint.path).isEmpty)
            #expect(try store.log.backup(to: dir.child("retry")) > 0)
        }
    }

    // MARK: Read-only opens

    /// A read-only open writes nothing, does not catch lagging views up, and refuses writes.
    @Test func aReadOnlyOpenWritesNothing() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            do {
                let store = try ReadingStore.open(at: url)
                try store.appendRecorded(DemoHistory.generate(.init(readers: 1, days: 20, seed: 2)))
                // An append that does not fold (the raw log): the views lag by one event.
                try store.log.append([NewEvent(eventID: UUID(), payload: [0])], to: "raw")
            }
            let before = try Data(contentsOf: url.appendingPathComponent("data.mdb"))
            let store = try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(readOnly: true))
            #expect(try store.viewCheckpoint() + 1 == store.log.lastPosition())
            _ = try store.viewDigest()
            #expect { try store.appendRecorded([]) } throws: { ($0 as? LMDBError)?.code == EACCES }
            #expect(try Data(contentsOf: url.appendingPathComponent("data.mdb")) == before)
        }
    }
}

/// Mounts a tmpfs of `size` under `dir`; nil (and a note) where mounting is not permitted.
func mountTmpfs(in dir: TempDirectory, size: String) throws -> URL? {
    let mountPoint = dir.child("tmpfs")
    try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
    let mount = Process()
    mount.executableURL = URL(fileURLWithPath: "/bin/mount")
    mount.arguments = ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", mountPoint.path]
    mount.standardError = FileHandle.nullDevice
    do { try mount.run(); mount.waitUntilExit() } catch {}
    guard mount.terminationStatus == 0, mount.terminationReason == .exit else {
        Reliability.report("tmpfs", "SKIPPED: mount -t tmpfs is not permitted here")
        return nil
    }
    return mountPoint
}

/// Unmounts what ``mountTmpfs(in:size:)`` mounted.
func unmount(_ mountPoint: URL) {
    let umount = Process()
    umount.executableURL = URL(fileURLWithPath: "/bin/umount")
    umount.arguments = [mountPoint.path]
    try? umount.run()
    umount.waitUntilExit()
}
