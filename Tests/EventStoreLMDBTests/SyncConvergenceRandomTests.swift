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

            func pick(_ count: Int) -> Int { Int(random.next(upperBound: UInt64(count))) }
            func now() -> Timestamp {
                clock += Int64(pick(90) + 1) * 60_000_000
                return Timestamp(microseconds: clock)
            }

            for _ in 0..<Self.steps {
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
                case 57..<62:
                    // A record no receiver can take, made from one the device could send.
                    let held = try device.store.changes(since: VersionVector(), limit: 50)
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
                case 62..<65:
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
                  + "\(copies) copies, \(restores) restores, \(injections) injected, \(syncs) deliveries")

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
            try ReadingProjector(dayStartHour: 0).fold(copiesOfEach.values.map { $0.min { $0.origin! < $1.origin! }! }, into: &views)
            #expect(try ViewDigest.of(views) == digests[0], "seed \(seed): the reference fold of the union differs")
        }
    }
}

extension Devices {
    /// Delivers what `to` lacks from `from`.
    @discardableResult
    static func deliver(from: SyncConvergenceRandomTests.Device, to: SyncConvergenceRandomTests.Device) throws -> MergeResult {
        try deliver(from: from.store, to: to.store)
    }
}
