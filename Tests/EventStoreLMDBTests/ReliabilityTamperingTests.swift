import Foundation
import TestSupport
import ReadingEvents
import Testing
@_spi(RawLog) @testable import EventStoreLMDB

/// Records changed directly with LMDB, bypassing the API: `EventLog.verify` finds each change and
/// names the first bad position.
///
/// What it cannot find: the chain is a plain hash, not a keyed MAC, so someone who rewrites a
/// record *and* every later record's prevHash, the indexes and meta's head consistently produces
/// a log that verifies. The checks find accidental damage and partial tampering, not a forger
/// with write access.
@Suite struct ReliabilityTamperingTests {
    static let count: UInt64 = 20

    /// A log of 20 events in two streams, the `events` table opened raw, and the check.
    func withTamperedLog(_ tamper: (EventLog, WriteTransaction, LMDBDatabase<BigEndianUInt64, RawBytes>) throws -> Void,
                         check: (VerificationReport) throws -> Void) throws {
        try withTempDirectory { dir in
            let log = try EventLog.open(at: dir.child("store"))
            var rng = SplitMix64(seed: 7)
            for i in 0..<Int(Self.count) { try log.append(randomEvents(1, using: &rng, maxPayload: 40), to: i % 2 == 0 ? "a" : "b") }
            #expect(try log.verify().isIntact)
            let raw = try log.environment.openDatabase(named: "events", keys: BigEndianUInt64.self, values: RawBytes.self, create: false)
            try log.environment.write { txn in try tamper(log, txn, raw) }
            try check(try log.verify())
        }
    }

    static func recrc(_ bytes: inout [UInt8]) {
        let crc = CRC32C.checksum(bytes[5...])
        bytes[1] = UInt8(crc >> 24); bytes[2] = UInt8(crc >> 16 & 0xFF); bytes[3] = UInt8(crc >> 8 & 0xFF); bytes[4] = UInt8(crc & 0xFF)
    }

    @Test func anEditedRecordWithItsOldChecksumIsAChecksumFaultAtItsPosition() throws {
        try withTamperedLog({ _, txn, raw in
            var bytes = try #require(try txn.get(raw, 7))
            bytes[bytes.count - 1] ^= 0x01
            try txn.put(raw, 7, bytes)
        }, check: { report in
            #expect(report.firstBadPosition == 7)
            #expect(report.faults.first?.kind == .checksum)
        })
    }

    @Test func anEditedRecordWithARecomputedChecksumBreaksTheChainAtTheNextPosition() throws {
        try withTamperedLog({ _, txn, raw in
            var bytes = try #require(try txn.get(raw, 7))
            bytes[bytes.count - 1] ^= 0x01
            Self.recrc(&bytes)
            try txn.put(raw, 7, bytes)
        }, check: { report in
            // Record 7 itself is self-consistent; the record after it no longer chains to it.
            #expect(report.firstBadPosition == 8, "\(report.faults)")
            #expect(report.faults.first?.kind == .chainBreak)
        })
    }

    @Test func theLastRecordEditedAndReChecksummedIsAHeadFault() throws {
        try withTamperedLog({ _, txn, raw in
            var bytes = try #require(try txn.get(raw, Self.count))
            bytes[bytes.count - 1] ^= 0x80
            Self.recrc(&bytes)
            try txn.put(raw, Self.count, bytes)
        }, check: { report in
            #expect(report.firstBadPosition == Self.count, "\(report.faults)")
            #expect(report.faults.contains { $0.kind == .head })
        })
    }

    @Test func aDeletedRecordIsAGapNamingTheMissingPosition() throws {
        try withTamperedLog({ _, txn, raw in
            let deleted = try txn.delete(raw, 5)
            #expect(deleted)
        }, check: { report in
            let first = try #require(report.faults.first)
            #expect(first.kind == .positionGap)
            #expect(first.position == 6 && first.detail.contains("expected position 5"), "\(first)")
            #expect(report.firstBadPosition == 6)
        })
    }

    @Test func twoSwappedRecordsAreAPositionMismatchAtTheFirst() throws {
        try withTamperedLog({ _, txn, raw in
            let a = try #require(try txn.get(raw, 9)), b = try #require(try txn.get(raw, 10))
            try txn.put(raw, 9, b)
            try txn.put(raw, 10, a)
        }, check: { report in
            #expect(report.firstBadPosition == 9)
            #expect(report.faults.first?.kind == .positionMismatch)
        })
    }

    @Test func swappedRecordsWithRewrittenPositionsAndChecksumsStillBreakTheChain() throws {
        try withTamperedLog({ _, txn, raw in
            var a = try #require(try txn.get(raw, 9)), b = try #require(try txn.get(raw, 10))
            swap(&a, &b)
            a.replaceSubrange(21..<29, with: BigEndianUInt64.encode(9)); Self.recrc(&a)
            b.replaceSubrange(21..<29, with: BigEndianUInt64.encode(10)); Self.recrc(&b)
            try txn.put(raw, 9, a)
            try txn.put(raw, 10, b)
        }, check: { report in
            #expect(report.firstBadPosition == 9, "\(report.faults)")
            #expect(report.faults.first?.kind == .chainBreak)
        })
    }

    @Test func aWellFormedRecordInsertedWithoutTheAPIIsFound() throws {
        try withTamperedLog({ _, txn, raw in
            // A forged record at the end: right format, checksum, position and prevHash, but no
            // index entries and meta still names the old head.
            let previous = try #require(try txn.get(raw, Self.count))
            let forged = EventRecord.encode(position: Self.count + 1, streamVersion: 11, eventID: UUID(), streamKey: try StreamKey(name: "a").encoded(),
                                            payload: Array("forged".utf8), prevHash: EventRecord.hash(previous))
            try txn.put(raw, Self.count + 1, forged)
        }, check: { report in
            #expect(report.firstBadPosition == Self.count + 1, "\(report.faults)")
            #expect(Set(report.faults.map(\.kind)).isSuperset(of: [.eventIDIndex, .streamIndex, .head]))
        })
    }

    @Test func aRecordInsertedInTheMiddleIsFound() throws {
        try withTamperedLog({ _, txn, raw in
            // Shift 11 ... 20 up by one (re-checksummed, positions rewritten) and forge 11.
            for position in stride(from: Self.count, through: 11, by: -1) {
                var bytes = try #require(try txn.get(raw, position))
                bytes.replaceSubrange(21..<29, with: BigEndianUInt64.encode(position + 1)); Self.recrc(&bytes)
                try txn.put(raw, position + 1, bytes)
            }
            let previous = try #require(try txn.get(raw, 10))
            try txn.put(raw, 11, EventRecord.encode(position: 11, streamVersion: 6, eventID: UUID(), streamKey: try StreamKey(name: "a").encoded(),
                                                   payload: [1, 2, 3], prevHash: EventRecord.hash(previous)))
        }, check: { report in
            #expect(report.firstBadPosition == 11, "\(report.faults)")
            #expect(!report.isIntact)
        })
    }

    @Test func readsOfATamperedRecordThrowNamingItsPosition() throws {
        try withTempDirectory { dir in
            let log = try EventLog.open(at: dir.child("store"))
            var rng = SplitMix64(seed: 8)
            try log.append(randomEvents(10, using: &rng), to: "s")
            let raw = try log.environment.openDatabase(named: "events", keys: BigEndianUInt64.self, values: RawBytes.self, create: false)
            try log.environment.write { txn in
                var bytes = try #require(try txn.get(raw, 4))
                bytes[30] ^= 0xFF
                try txn.put(raw, 4, bytes)
            }
            #expect(throws: EventStoreError.self) { try log.read() }
            do { _ = try log.read(); Issue.record("read returned damaged data") } catch let error as EventStoreError {
                guard case .corruptRecord(let position, _) = error else { Issue.record("\(error)"); return }
                #expect(position == 4)
            }
            #expect(try log.read(limit: 3).count == 3)
        }
    }

    /// A record read in place (the rebuild's fold workers) passes and fails exactly as a record
    /// copied into arrays does: the same fields, or the same damage.
    @Test func aRecordReadInPlaceIsCheckedAsACopiedOne() throws {
        var rng = SplitMix64(seed: 0x1_0037)
        for trial in 0..<400 {
            let payload = (0..<Int(rng.next() % 60)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let key = trial % 3 == 0 ? try StreamKey(name: "named-\(trial)").encoded()
                : try StreamKey(.book(reader: ReaderID(), book: BookID())).encoded()
            var bytes = EventRecord.encode(position: UInt64(trial + 1), streamVersion: rng.next() % 1_000, eventID: UUID(),
                                           streamKey: key, payload: payload, prevHash: EventRecord.zeroHash)
            switch trial % 4 {
            case 0: break // intact
            case 1: bytes[Int(rng.next() % UInt64(bytes.count))] ^= UInt8(1 + rng.next() % 255) // a flip: checksum
            case 2: bytes[Int(rng.next() % UInt64(bytes.count - 5)) + 5] ^= 0x40; Self.recrc(&bytes) // a flip, re-checksummed
            default: bytes.removeLast(Int(rng.next() % UInt64(bytes.count))); if bytes.count > 5 { Self.recrc(&bytes) } // truncated
            }
            bytes.withUnsafeBytes { raw in
                let key = UInt64(trial + 1)
                switch (EventRecord.inspect(raw, key: key), EventRecord.inspectInPlace(raw, key: key)) {
                case (.success(let copied), .success(let inPlace)):
                    #expect(copied.eventID == inPlace.eventID && copied.key == inPlace.stream)
                    #expect(copied.streamVersion == inPlace.streamVersion && copied.payload == Array(inPlace.payload))
                case (.failure(let a), .failure(let b)):
                    #expect(a.kind == b.kind && a.reason == b.reason)
                default:
                    Issue.record("trial \(trial): one read accepted the record and the other refused it")
                }
            }
        }
    }

    /// Reading a damaged record in place throws what reading it copied throws (naming its position).
    @Test func aDamagedRecordReadInPlaceThrowsAsACopiedRead() throws {
        try withTempDirectory { dir in
            let log = try EventLog.open(at: dir.child("store"))
            var rng = SplitMix64(seed: 9)
            try log.append(randomEvents(10, using: &rng), to: "s")
            let raw = try log.environment.openDatabase(named: "events", keys: BigEndianUInt64.self, values: RawBytes.self, create: false)
            try log.environment.write { txn in
                var bytes = try #require(try txn.get(raw, 4))
                bytes[bytes.count - 1] ^= 0x01
                try txn.put(raw, 4, bytes)
            }
            try log.environment.read { txn in
                var copied: EventStoreError?, inPlace: EventStoreError?
                do { _ = try log.event(at: 4, in: txn) } catch let error as EventStoreError { copied = error }
                do { _ = try log.withEvent(at: 4, in: txn) { $0.payload.count } } catch let error as EventStoreError { inPlace = error }
                #expect(copied != nil && copied == inPlace, "\(String(describing: copied)) / \(String(describing: inPlace))")
                #expect(try log.withEvent(at: 3, in: txn) { Array($0.payload) } == log.event(at: 3, in: txn)?.payload)
                #expect(try log.withEvent(at: 99, in: txn) { _ in true } == nil)
            }
        }
    }
}
