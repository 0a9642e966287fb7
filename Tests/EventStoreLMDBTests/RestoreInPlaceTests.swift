import Foundation
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

/// A backup restored over the existing store, by the file operations users run (`cp`, `cp -r`,
/// `cat >`, `tar x`, `unzip -o`, run as real processes): the restored store may keep its
/// `data.mdb`'s inode, so only a peer can tell it was restored. Before the fix the restored store
/// issued its replica's sequences a second time: its new events never reached the peer and the
/// peer's events of the lost time never came back, and `verifyReplication` passed on both.
@Suite struct RestoreInPlaceTests {
    typealias F = Facade
    static let reader = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-0000000036AA")!)

    /// How the backup is put back over the store's directory.
    enum Form: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case cpFile, cpTree, catOver, tarExtract, unzipOverwrite
        var testDescription: String { rawValue }
    }

    /// Runs `command` through `/bin/sh -c`; requires exit status 0.
    static func shell(_ command: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "`\(command)` exited \(process.terminationStatus)")
    }

    static func quoted(_ url: URL) -> String { "'" + url.path.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Restores the backup directory `backup` over `store` by `form`.
    static func restore(_ backup: URL, over store: URL, by form: Form, scratch: URL) throws {
        let (bk, dir) = (quoted(backup), quoted(store))
        switch form {
        case .cpFile: try shell("cp \(bk)/data.mdb \(dir)/data.mdb")
        case .cpTree: try shell("cp -r \(bk)/. \(dir)/")
        case .catOver: try shell("cat \(bk)/data.mdb > \(dir)/data.mdb")
        case .tarExtract:
            let archive = quoted(scratch.appendingPathComponent("backup.tar"))
            try shell("tar -C \(bk) -cf \(archive) . && tar -C \(dir) --overwrite -xf \(archive)")
        case .unzipOverwrite:
            let archive = quoted(scratch.appendingPathComponent("backup.zip"))
            try shell("cd \(bk) && zip -q -r \(archive) . && cd \(dir) && unzip -q -o \(archive)")
        }
    }

    /// Adds `count` events on `store` (a book, then pages), returning their IDs.
    static func write(_ store: ReadingStore, book: BookID, count: Int, from minute: Int) throws -> Set<EventID> {
        var ids = Set<EventID>()
        if try store.withViews({ try $0.bookView(reader: reader, book: book) }) == nil {
            let context = CommandContext(reader: reader, occurredAt: Timestamp(microseconds: F.at("2025-03-01T08:00:00+09:00").microseconds + Int64(minute) * 60_000_000),
                                         timeZone: "Asia/Seoul", commandID: EventID())
            for event in try store.execute(.addBook(BookMetadata(title: "Restore \(minute)", pageCount: 500), status: .reading), book: book, context: context) {
                ids.insert(event.eventID)
            }
        }
        var minute = minute
        while ids.count < count {
            minute += 1
            let context = CommandContext(reader: reader, occurredAt: Timestamp(microseconds: F.at("2025-03-01T08:00:00+09:00").microseconds + Int64(minute) * 60_000_000),
                                         timeZone: "Asia/Seoul", commandID: EventID())
            for event in try store.execute(.recordPages(position: minute % 480 + 1), book: book, context: context) { ids.insert(event.eventID) }
        }
        return ids
    }

    /// One exchange as `replay sync --with` runs it: witnesses both ways, then both deliveries.
    static func exchange(_ a: ReadingStore, _ b: ReadingStore, witnesses: Bool) throws {
        if witnesses {
            _ = try a.noticeRestore(from: b.witnesses(of: a.replica))
            _ = try b.noticeRestore(from: a.witnesses(of: b.replica))
        }
        try Devices.deliver(from: a, to: b)
        try Devices.deliver(from: b, to: a)
    }

    static func held(_ store: ReadingStore) throws -> Set<EventID> {
        var held = Set<EventID>()
        try store.forEachEvent { held.insert($0.eventID); return true }
        return held
    }

    /// `after`: how many events the restored store writes before it syncs (fewer or more than the
    /// lost ones, 6); `witnesses`: whether the exchange compares witnesses first (the CLI does; a
    /// plain merge notices only a peer's sequences beyond its head).
    struct Plan: Sendable, CustomTestStringConvertible {
        let after: Int
        let witnesses: Bool
        var testDescription: String { "\(after) after\(witnesses ? ", witnesses" : ", merge only")" }
    }

    @Test(arguments: Form.allCases, [Plan(after: 2, witnesses: true), Plan(after: 9, witnesses: true), Plan(after: 2, witnesses: false)])
    func restoredInPlaceContinuesAsANewReplicaAndLosesNothing(form: Form, plan: Plan) throws {
        try withTempDirectory { dir in
            try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)
            let (aURL, bURL, backup) = (dir.child("a"), dir.child("b"), dir.child("backup"))
            let book = BookID(UUID(uuidString: "00000000-0000-4000-8000-0000000036B1")!)
            let other = BookID(UUID(uuidString: "00000000-0000-4000-8000-0000000036B2")!)
            var acknowledged = Set<EventID>()
            let oldReplica: ReplicaID
            do {
                let a = try ReadingStore.open(at: aURL)
                let b = try ReadingStore.open(at: bURL)
                oldReplica = a.replica
                acknowledged.formUnion(try Self.write(a, book: book, count: 4, from: 0))
                acknowledged.formUnion(try Self.write(b, book: other, count: 3, from: 100))
                try Self.exchange(a, b, witnesses: true)
            }
            // The backup: a plain copy of the closed store's directory.
            try Self.shell("cp -r \(Self.quoted(aURL)) \(Self.quoted(backup))")
            do {
                // Events written after the backup, synced to b, then lost with the device.
                let a = try ReadingStore.open(at: aURL)
                let b = try ReadingStore.open(at: bURL)
                acknowledged.formUnion(try Self.write(a, book: book, count: 6, from: 200))
                try Self.exchange(a, b, witnesses: true)
            }
            try Self.restore(backup, over: aURL, by: form, scratch: dir.url)
            let a = try ReadingStore.open(at: aURL)
            let b = try ReadingStore.open(at: bURL)
            acknowledged.formUnion(try Self.write(a, book: book, count: plan.after, from: 300))
            acknowledged.formUnion(try Self.write(b, book: other, count: 2, from: 400))
            try Self.exchange(a, b, witnesses: plan.witnesses)
            try Self.exchange(a, b, witnesses: plan.witnesses)
            #expect(a.replica != oldReplica, "the restored store kept replica \(oldReplica)")
            for (name, store) in [("restored", a), ("peer", b)] {
                let held = try Self.held(store)
                #expect(held == acknowledged, "\(name) lacks \(acknowledged.subtracting(held).count), holds \(held.subtracting(acknowledged).count) unacknowledged")
                let faults = try store.verifyReplication(), kept = try store.quarantine()
                #expect(faults.isEmpty, "\(name): \(faults)")
                #expect(kept.isEmpty, "\(name)'s quarantine: \(kept)")
                #expect(try store.freshFoldDigest() == store.viewDigest(), "\(name): a fresh fold differs")
            }
            #expect(try a.viewDigest() == b.viewDigest())
            #expect(try a.versionVector() == b.versionVector())
            // A third exchange moves nothing.
            #expect(try Devices.deliver(from: a, to: b).appended == 0)
            #expect(try Devices.deliver(from: b, to: a).appended == 0)
        }
    }
}
