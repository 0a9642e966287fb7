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
}
