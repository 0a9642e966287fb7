import Foundation
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

/// Issue 22's randomized convergence test, store to store: three devices of one reader and a
/// partner's device write, import the same exports on several devices, restore a backup and copy a
/// store (each continues as a new device), receive injected records a merge must refuse, and sync
/// in random orders, and receive records with far stamps or oversized texts (issue 36). After a final exchange every device holds exactly every acknowledged event,
/// the same views as each other and as a reference fold of the union, and its quarantine lists
/// exactly the records injected into it.
///
/// `SYNC_SOAK_SEEDS` (default 3) seeds of `SYNC_SOAK_STEPS` (default 120) steps each; the long
/// run is `Scripts/stress.sh long` (200 seeds of 300 steps). Each failure names its seed.
@Suite struct SyncConvergenceRandomTests {
    typealias F = Facade

    static let seeds: [UInt64] = {
        let count = ProcessInfo.processInfo.environment["SYNC_SOAK_SEEDS"].flatMap(Int.init) ?? 3
        return (0..<UInt64(max(1, count))).map { 22_000 + $0 }
    }()
    static let steps = ProcessInfo.processInfo.environment["SYNC_SOAK_STEPS"].flatMap(Int.init) ?? 120

    static let reader = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-0000000022AA")!)
    static let partner = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-0000000022BB")!)

    /// One device: its store, whose events it writes, and what was injected into it.
    final class Device {
        let name: String
        let store: ReadingStore
        let reader: ReaderID
        var injected: Set<EventID> = []
        init(_ name: String, _ store: ReadingStore, _ reader: ReaderID) { self.name = name; self.store = store; self.reader = reader }
    }

    /// An export's rows: deterministic event IDs from the file and row (as ReadingImport makes
    /// them), a book of 320 pages added, read to pages 40 and 95, rated 4, imported at `importedAt`.
    static func export(_ file: Int, importedAt: Timestamp) throws -> [EventEnvelope] {
        let book = BookID(UUID(uuidString: String(format: "00000000-0000-4000-8000-0000000E%04X", file))!)
        let start = F.at("2025-02-01T09:00:00+09:00").microseconds + Int64(file) * 86_400_000_000
        func row(_ index: Int, _ dayOffset: Int64, _ event: ReadingEvent) throws -> EventEnvelope {
            let id = EventID(UUID(uuidString: String(format: "00000000-0000-4000-8000-000E%04X%04X", file, index))!)
            let context = CommandContext(reader: reader, occurredAt: Timestamp(microseconds: start + dayOffset * 86_400_000_000),
                                         timeZone: "Asia/Seoul", recordedAt: importedAt, commandID: id)
            return try context.envelopes(for: [event])[0]
        }
        return [
            try row(1, 0, .bookAdded(BookAdded(book: book, metadata: BookMetadata(title: "가져온 책 \(file)", pageCount: 320), status: .reading))),
            try row(2, 1, .pagesRead(PagesRead(book: book, position: 40))),
            try row(3, 2, .pagesRead(PagesRead(book: book, position: 95))),
            try row(4, 3, .ratingSet(RatingSet(book: book, rating: try Rating(stars: 4)))),
        ]
    }

    /// Issue 36: a record made from one `device` could send, under a made-up replica, with a
    /// stamp far from its `recordedAt` (just before 2200-01-01, or at 1 microsecond) or with a
    /// memo of 10 characters and 60 KB (over its byte limit): an import of it into `target` is
    /// refused whole and a merge keeps it in the quarantine; nothing is written. Returns its event
    /// ID (`nil` when the device holds nothing yet).
    static func injectFarStampOrOversizedText(from device: Device, into target: Device, pick: (Int) -> Int,
                                              seed: UInt64) throws -> EventID? {
        let held = try device.store.changes(since: VersionVector(), limit: 50)
        guard !held.isEmpty else { return nil }
        var bad = held[pick(held.count)]
        let fake = ReplicaID()
        bad.eventID = EventID()
        switch pick(3) {
        case 0: bad.origin = EventOrigin(stamp: 7_258_118_400_000_000 - 1, replica: fake, sequence: 1)
        case 1: bad.origin = EventOrigin(stamp: 1, replica: fake, sequence: 1)
        default:
            let heavy = String(repeating: "e" + String(repeating: "\u{0301}", count: 3_000), count: 10)
            bad = EventEnvelope(reader: bad.reader, occurredAt: bad.occurredAt, timeZone: bad.timeZone, recordedAt: bad.recordedAt,
                                event: .memoWritten(MemoWritten(memo: MemoID(), book: BookID(), text: heavy, page: nil)),
                                origin: EventOrigin(stamp: UInt64(bad.recordedAt.microseconds), replica: fake, sequence: 1))
        }
        let before = try target.store.lastPosition()
        #expect(throws: MergeRejection.self, "seed \(seed): an import of \(bad.origin!)") { try target.store.importHistory([bad]) }
        let result = try target.store.merge([bad])
        #expect(result.quarantined == 1 && result.appended == 0, "seed \(seed): \(result)")
        #expect(try target.store.lastPosition() == before)
        return bad.eventID
    }

    @Test(arguments: seeds)
    func devicesPartnersImportsCopiesAndInjectedRecordsConverge(seed: UInt64) throws {
        try withTempDirectory { dir in
            var random = SplitMix64(seed: seed)
            var devices: [Device] = []
            for (name, reader) in [("phone", Self.reader), ("tablet", Self.reader), ("laptop", Self.reader), ("partner", Self.partner)] {
                devices.append(Device(name, try ReadingStore.open(at: dir.child(name)), reader))
            }
            let books = (0..<4).map { BookID(UUID(uuidString: String(format: "00000000-0000-4000-8000-00000022B%03X", $0))!) }
            var acknowledged = Set<EventID>()
            var clock = F.at("2025-03-01T08:00:00+09:00").microseconds
            var pendingBackups: [(url: URL, reader: ReaderID, injected: Set<EventID>)] = []
            var copies = 0, restores = 0, injections = 0, imports = 0, syncs = 0
            var inPlace = InPlaceRestores()

            func pick(_ count: Int) -> Int { Int(random.next(upperBound: UInt64(count))) }
            func now() -> Timestamp {
                clock += Int64(pick(90) + 1) * 60_000_000
                return Timestamp(microseconds: clock)
            }

            for _ in 0..<Self.steps {
                if !inPlace.pending.isEmpty { try inPlace.restorePending(&devices, dir: dir, form: pick(2)) }
                let device = devices[pick(devices.count)]
                switch pick(100) {
                case 0..<40:
                    // A command on one of the reader's books (refused ones write nothing).
                    let book = books[pick(books.count)]
                    let known = try device.store.withViews { try $0.bookView(reader: device.reader, book: book) } != nil
                    let command: BookCommand
                    switch known ? pick(6) : 0 {
                    case 0: command = .addBook(BookMetadata(title: "책 \(book.uuid.uuidString.suffix(3))", pageCount: 400), status: .reading)
                    case 1, 2: command = .recordPages(position: pick(400) + 1)
                    case 3: command = .setRating(stars: Double(pick(5) + 1))
                    case 4: command = .like
                    default: command = .writeMemo(MemoID(), text: "메모 \(pick(1000))", page: nil)
                    }
                    let context = CommandContext(reader: device.reader, occurredAt: now(), timeZone: "Asia/Seoul", commandID: EventID())
                    do {
                        for envelope in try device.store.execute(command, book: book, context: context) { acknowledged.insert(envelope.eventID) }
                    } catch is ValidationError {}
                case 40..<50 where device.reader == Self.reader:
                    // The same export file imported on this device (of two files).
                    let rows = try Self.export(pick(2), importedAt: now())
                    let outcome = try device.store.importHistory(rows)
                    let refused = Set(outcome.rejected.map(\.eventID))
                    for row in rows where !refused.contains(row.eventID) {
                        #expect(try device.store.event(withID: row.eventID) != nil, "seed \(seed): imported row \(row.eventID) missing")
                        acknowledged.insert(row.eventID)
                    }
                    imports += 1
                case 50..<54 where devices.count < 9:
                    // A backup now, restored as a new device some steps later (its old events come
                    // back, its new ones are its own); or a file copy of the store, opened at once.
                    if pick(2) == 0 {
                        let target = dir.child("backup-\(pendingBackups.count + restores)")
                        try device.store.backup(to: target)
                        pendingBackups.append((target, device.reader, device.injected))
                    } else {
                        let target = dir.child("copy-\(copies)")
                        try FileManager.default.copyItem(at: dir.child(device.name), to: target)
                        let copy = Device("copy-\(copies)", try ReadingStore.open(at: target), device.reader)
                        copy.injected = device.injected  // a copy holds its source's quarantine
                        #expect(!devices.contains { $0.store.replica == copy.store.replica }, "seed \(seed): a copy kept its replica ID")
                        devices.append(copy)
                        copies += 1
                    }
                case 54..<57 where !pendingBackups.isEmpty:
                    let source = pendingBackups.removeFirst()
                    let restored = Device(source.url.lastPathComponent, try ReadingStore.open(at: source.url), source.reader)
                    restored.injected = source.injected
                    #expect(!devices.contains { $0.store.replica == restored.store.replica }, "seed \(seed): a restore kept its replica ID")
                    devices.append(restored)
                    restores += 1
                case 69..<71 where devices.count > 1:
                    // A backup restored over the device's own files later (issue 36).
                    try inPlace.backUpOrSchedule(device, others: devices, dir: dir, pick: pick)
                case 57..<62:
                    // A record no receiver can take, made from one the device could send.
                    // (Rows of imports with derived IDs are left out: another fact under one of
                    // them is another version of the row, kept like a copy.)
                    let held = try device.store.changes(since: VersionVector(), limit: 50).filter { $0.eventID.uuid.uuid.6 >> 4 != 8 }
                    guard !held.isEmpty else { continue }
                    var bad = held[pick(held.count)]
                    let fake = ReplicaID()
                    var target = devices[pick(devices.count)]
                    switch pick(3) {
                    case 0:
                        bad.eventID = EventID()
                        bad.origin = EventOrigin(stamp: bad.origin!.stamp, replica: .provisional, sequence: 1)
                    case 1:
                        // A stream that does not fit the payload's book.
                        bad.eventID = EventID()
                        bad.stream = .book(reader: bad.reader, book: BookID())
                        bad.origin = EventOrigin(stamp: bad.origin!.stamp, replica: fake, sequence: 1)
                    default:
                        // An event ID the device holds, with another fact.
                        target = device
                        bad.occurredAt = Timestamp(microseconds: bad.occurredAt.microseconds - 1_000_000)
                        bad.origin = EventOrigin(stamp: bad.origin!.stamp, replica: fake, sequence: 1)
                    }
                    let before = try target.store.lastPosition()
                    let result = try target.store.merge([bad])
                    #expect(result.quarantined == 1 && result.appended == 0, "seed \(seed): \(result)")
                    #expect(try target.store.lastPosition() == before)
                    target.injected.insert(bad.eventID)
                    injections += 1
                case 62..<66 where device.reader == Self.reader:
                    // A newer export of the same account: one page count changed (ReadingImport's
                    // derived IDs, so its rows are other versions of the rows another device imported).
                    acknowledged.formUnion(try Self.importNewerExport(device, variant: pick(2), at: now(), seed: seed))
                    imports += 1
                case 66..<69:
                    // A forged copy of held facts (same IDs and facts, a made-up replica, tiny stamps).
                    try Self.forgeCopies(of: device, into: devices[pick(devices.count)], count: pick(8) + 1, seed: seed)
                    injections += 1
                case 71..<74:
                    // Issue 36: a record with a far stamp or an oversized text, refused by an import
                    // and quarantined by a merge; nothing else stops.
                    let target = devices[pick(devices.count)]
                    if let injected = try Self.injectFarStampOrOversizedText(from: device, into: target, pick: pick, seed: seed) {
                        target.injected.insert(injected)
                        injections += 1
                    }
                default:
                    // One delivery between two devices, in a random direction.
                    let other = devices[pick(devices.count)]
                    guard other !== device else { continue }
                    if pick(4) == 0 {
                        // A resend of everything (a lost acknowledgement, a server page holding
                        // copies the receiver has): all of it is held, nothing quarantined.
                        let result = try other.store.merge(try device.store.changes(since: VersionVector(), limit: .max))
                        #expect(result.quarantined == 0, "seed \(seed): a resend quarantined \(result.quarantined)")
                    } else {
                        try Devices.deliver(from: device, to: other)
                    }
                    syncs += 1
                }
            }
            // Backups never restored are restored now, then everyone syncs with everyone.
            for source in pendingBackups {
                let restored = Device(source.url.lastPathComponent, try ReadingStore.open(at: source.url), source.reader)
                restored.injected = source.injected
                devices.append(restored)
            }
            for _ in 0..<2 {
                for from in devices { for to in devices where to !== from { try Devices.deliver(from: from, to: to) } }
            }
            print("SYNC-SOAK seed \(seed): \(devices.count) devices, \(acknowledged.count) events acknowledged, \(imports) imports, "
                  + "\(copies) copies, \(restores) restores, \(inPlace.restored) restores in place, \(injections) injected, \(syncs) deliveries")

            // Every device: exactly the acknowledged events, the same views, its injected records
            // in its quarantine and nothing else there.
            let stores = devices.map(\.store)
            for device in devices {
                var held = Set<EventID>()
                try device.store.forEachEvent { held.insert($0.eventID); return true }
                #expect(held == acknowledged, "seed \(seed): \(device.name) holds \(held.subtracting(acknowledged).count) unacknowledged, lacks \(acknowledged.subtracting(held).count)")
                #expect(Set(try device.store.quarantine().map(\.eventID)) == device.injected, "seed \(seed): \(device.name)'s quarantine")
                #expect(try device.store.verifyReplication().isEmpty, "seed \(seed): \(device.name)'s replication tables")
            }
            let digests = try stores.map { try $0.viewDigest() }
            #expect(Set(digests).count == 1, "seed \(seed): view digests differ")
            for store in stores { #expect(try store.freshFoldDigest() == digests[0], "seed \(seed): a fresh fold differs") }
            // The vectors agree on every real replica (an injected record's made-up replica is only
            // in the vector of the device that holds it in its quarantine).
            let real = Set(stores.map(\.replica))
            let vectors = try stores.map { store in try store.versionVector().heads.filter { real.contains($0.key) } }
            #expect(Set(vectors).count == 1, "seed \(seed): version vectors differ")
            var views = InMemoryViewStore()
            let copiesOfEach = Dictionary(grouping: try stores[0].changes(since: VersionVector(), limit: .max), by: \.eventID)
            try ReadingProjector(dayStartHour: 0).fold(copiesOfEach.values.map(Self.canonical), into: &views)
            #expect(try ViewDigest.of(views) == digests[0], "seed \(seed): the reference fold of the union differs")
        }
    }
    /// A Goodreads-like export of one book with derived event IDs (UUID version 8, as ReadingImport
    /// makes them), in two variants that differ in the book's page count: the newer export.
    static func newerExport(variant: Int, importedAt: Timestamp) throws -> [EventEnvelope] {
        let book = BookID(UUID(uuidString: "00000000-0000-4000-8000-0000000E8888")!)
        let start = F.at("2025-02-10T12:00:00+09:00").microseconds
        func row(_ index: Int, _ dayOffset: Int64, _ event: ReadingEvent) throws -> EventEnvelope {
            let id = EventID(UUID(uuidString: String(format: "00000000-0000-8000-8000-00000008%04X", index))!)
            let context = CommandContext(reader: reader, occurredAt: Timestamp(microseconds: start + dayOffset * 86_400_000_000),
                                         timeZone: "Asia/Seoul", recordedAt: importedAt, commandID: id)
            return try context.envelopes(for: [event])[0]
        }
        return [
            try row(1, 0, .bookAdded(BookAdded(book: book, metadata: BookMetadata(title: "새 내보내기", pageCount: 300 + 10 * variant), status: .reading))),
            try row(2, 1, .pagesRead(PagesRead(book: book, position: 120))),
            try row(3, 2, .bookFinished(BookFinished(book: book, finishedOn: try LocalDate(iso: "2025-02-12")))),
        ]
    }

    /// Imports a variant of ``newerExport(variant:importedAt:)`` on `device`; returns the rows it
    /// holds (a variant imported over the other keeps what the store holds: one store never rewrites).
    static func importNewerExport(_ device: Device, variant: Int, at instant: Timestamp, seed: UInt64) throws -> Set<EventID> {
        let rows = try newerExport(variant: variant, importedAt: instant)
        let outcome = try device.store.importHistory(rows)
        let refused = Set(outcome.rejected.map(\.eventID))
        var held = Set<EventID>()
        for row in rows where !refused.contains(row.eventID) {
            #expect(try device.store.event(withID: row.eventID) != nil, "seed \(seed): imported row \(row.eventID) missing")
            held.insert(row.eventID)
        }
        return held
    }

    /// Merges forged copies of up to `count` of `source`'s held events into `target` (same IDs and
    /// facts, a made-up replica, tiny stamps in reverse order): nothing is appended and the views
    /// do not change. Copies a door check sets aside are listed as injected.
    static func forgeCopies(of source: Device, into target: Device, count: Int, seed: UInt64) throws {
        let held = try source.store.changes(since: VersionVector(), limit: 50).filter { try target.store.event(withID: $0.eventID) != nil }.prefix(count).map { $0 }
        guard !held.isEmpty else { return }
        let forger = ReplicaID()
        let forged = held.enumerated().map { index, envelope in
            var copy = envelope
            copy.origin = EventOrigin(stamp: UInt64(held.count - index), replica: forger, sequence: UInt64(index + 1))
            return copy
        }
        let digest = try target.store.viewDigest(), before = try target.store.lastPosition()
        let result = try target.store.merge(forged)
        let after = try target.store.lastPosition()
        #expect(result.appended == 0 && after == before, "seed \(seed): \(result)")
        #expect(try target.store.viewDigest() == digest, "seed \(seed): a forged copy changed the views")
        for entry in try target.store.quarantine() where entry.envelope?.origin?.replica == forger { target.injected.insert(entry.eventID) }
    }

    /// The copy each event is read as, by the rule of the Replication article: placed by the first
    /// copy that may place it, stating the fact of the last.
    static func canonical(_ copies: [EventEnvelope]) -> EventEnvelope {
        let places = copies.filter(\.mayPlaceItsEvent)
        let place = (places.isEmpty ? copies : places).min { $0.origin! < $1.origin! }!
        var stated = copies.max { $0.origin! < $1.origin! }!
        stated.origin = place.origin
        stated.recordedAt = place.recordedAt
        return stated
    }

}

extension Devices {
    /// Delivers what `to` lacks from `from`, as `replay sync --with` does: `to` first compares
    /// `from`'s copies of its own replica's sequences (a restore in place tells there).
    @discardableResult
    static func deliver(from: SyncConvergenceRandomTests.Device, to: SyncConvergenceRandomTests.Device) throws -> MergeResult {
        _ = try to.store.noticeRestore(from: from.store.witnesses(of: to.store.replica))
        return try deliver(from: from.store, to: to.store)
    }
}

extension SyncConvergenceRandomTests {
    /// Restores in place (issue 36): a device's backup, taken at one step, is written back over
    /// the device's own `data.mdb` at a later one (`cat BK/data.mdb > A/data.mdb` or `cp`, which
    /// keep the inode), after the device delivered what it wrote to another device (so nothing
    /// acknowledged is lost with it). The restored device must notice at a sync and lose nothing.
    struct InPlaceRestores {
        var backups: [String: (url: URL, injected: Set<EventID>)] = [:]
        var pending: [(name: String, to: Device)] = []
        var restored = 0

        /// Takes a backup of `device`, or, when a device has one, schedules its restore for the
        /// next step (the store must be closed first) after a delivery of its events to another device.
        mutating func backUpOrSchedule(_ device: Device, others: [Device], dir: TempDirectory, pick: (Int) -> Int) throws {
            guard pending.isEmpty else { return }
            // A device that has a backup is restored; else this one is backed up.
            guard let restoring = others.first(where: { backups[$0.name] != nil }) else {
                let url = dir.child("in-place-\(device.name)-\(UUID().uuidString.prefix(6))")
                try device.store.backup(to: url)
                backups[device.name] = (url, device.injected)
                return
            }
            let candidates = others.filter { $0 !== restoring }
            pending.append((restoring.name, candidates[pick(candidates.count)]))
        }

        /// The scheduled restore: the device's events go to another device, the store is closed,
        /// its `data.mdb` overwritten with the backup's bytes, and it opens again.
        mutating func restorePending(_ devices: inout [Device], dir: TempDirectory, form: Int) throws {
            guard let (name, other) = pending.popLast(), let index = devices.firstIndex(where: { $0.name == name }),
                  let backup = backups.removeValue(forKey: name) else { return }
            try Devices.deliver(from: devices[index], to: other)
            let reader = devices[index].reader
            devices.remove(at: index)   // the last reference: the store closes
            let data = dir.child(name).appendingPathComponent("data.mdb")
            let source = backup.url.appendingPathComponent("data.mdb")
            if form == 0 {
                let bytes = try Data(contentsOf: source)
                let handle = try FileHandle(forWritingTo: data)
                try handle.truncate(atOffset: 0)
                try handle.write(contentsOf: bytes)
                try handle.close()
            } else {
                let cp = Process()
                cp.executableURL = URL(fileURLWithPath: "/bin/cp")
                cp.arguments = [source.path, data.path]
                try cp.run()
                cp.waitUntilExit()
                try #require(cp.terminationStatus == 0)
            }
            let device = Device(name, try ReadingStore.open(at: dir.child(name)), reader)
            device.injected = backup.injected
            devices.append(device)
            // Its first sync is with a device that holds what it wrote before the loss (the advice
            // of docs/replicas-and-sync.md): it notices the restore there.
            try Devices.deliver(from: other, to: device)
            restored += 1
        }
    }
}
