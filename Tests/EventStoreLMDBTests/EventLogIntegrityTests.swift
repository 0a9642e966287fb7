import Foundation
import ReadingEvents
import Testing
@testable import EventStoreLMDB

@Suite struct EventLogIntegrityTests {
    /// A log with `count` events over two streams.
    func filledLog(_ log: EventLog, count: Int, seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        for i in 0..<count {
            try log.append(randomEvents(1, using: &rng, maxPayload: 40)[0], to: "s\(i % 2)")
        }
    }

    /// The stored bytes of the record at `position`, read through the wrapper.
    func rawRecord(_ log: EventLog, _ position: UInt64) throws -> [UInt8] {
        try log.environment.read { try #require(try $0.get(log.events, position)) }
    }

    /// Overwrites the record at `position` directly in `events`, bypassing the log.
    func overwrite(_ log: EventLog, _ position: UInt64, with bytes: [UInt8]) throws {
        try log.environment.write { try $0.put(log.events, position, bytes) }
    }

    /// Recomputes the CRC so a tampered record passes its own checksum.
    func resealed(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        let crc = CRC32C.checksum(bytes[5...])
        bytes[1] = UInt8(crc >> 24)
        bytes[2] = UInt8(crc >> 16 & 0xFF)
        bytes[3] = UInt8(crc >> 8 & 0xFF)
        bytes[4] = UInt8(crc & 0xFF)
        return bytes
    }

    @Test func aDamagedRecordIsATypedErrorNamingItsPosition() throws {
        try withLog { (log: EventLog) throws in
            try filledLog(log, count: 12, seed: 5)
            #expect(try log.verify().isIntact)
            let original = try rawRecord(log, 5)
            var flipped = original
            flipped[flipped.count - 1] ^= 0x01
            try overwrite(log, 5, with: flipped)
            let error = #expect(throws: EventStoreError.self) { _ = try log.read() }
            guard case .corruptRecord(let position, let reason) = error else {
                Issue.record("expected corruptRecord, got \(String(describing: error))")
                return
            }
            #expect(position == 5)
            #expect(reason.contains("checksum"))
            #expect(try log.read(limit: 4).count == 4)  // records before it still read
            let byID = try original.withUnsafeBytes { try EventRecord.decode($0, key: 5) }.eventID
            #expect(throws: EventStoreError.self) { _ = try log.event(withID: byID) }
            #expect(throws: EventStoreError.self) { _ = try log.readStream("s0") }

            let report = try log.verify()
            #expect(report.firstBadPosition == 5)
            #expect(report.faults.first?.kind == .checksum)
            #expect(report.faults.contains { $0.position == 6 && $0.kind == .chainBreak })

            // Truncated record, and a record stored under the wrong key.
            try overwrite(log, 5, with: original)
            try overwrite(log, 3, with: Array(original.prefix(20)))
            try overwrite(log, 9, with: try rawRecord(log, 8))
            let truncated = #expect(throws: EventStoreError.self) { _ = try log.read(from: 3, limit: 1) }
            #expect(truncated.map { if case .corruptRecord(3, _) = $0 { true } else { false } } == true)
            let moved = #expect(throws: EventStoreError.self) { _ = try log.read(from: 9, limit: 1) }
            #expect(moved.map { if case .corruptRecord(9, _) = $0 { true } else { false } } == true)
            let kinds = try log.verify().faults.map { "\($0.position):\($0.kind)" }
            #expect(kinds.contains("3:malformed"))
            #expect(kinds.contains("9:positionMismatch"))
        }
    }

    @Test func verifyFindsATamperedChainAtTheFirstBadPosition() throws {
        var rng = SplitMix64(seed: 21)
        try withLog { (log: EventLog) throws in
            try filledLog(log, count: 30, seed: 9)
            let victim = UInt64.random(in: 2...28, using: &rng)
            var bytes = try rawRecord(log, victim)
            bytes[bytes.count - 1] ^= 0xFF
            try overwrite(log, victim, with: resealed(bytes))
            // The record passes its own checksum, so it reads; the chain exposes it.
            #expect(try log.read().count == 30)
            let report = try log.verify()
            #expect(report.firstBadPosition == victim + 1)
            #expect(report.faults.map(\.kind) == [.chainBreak])

            // Tampering the last record is caught by the head hash kept in meta.
            var last = try rawRecord(log, 30)
            last[last.count - 1] ^= 0xFF
            try overwrite(log, 30, with: resealed(last))
            #expect(try log.verify().faults.contains { $0.kind == .head && $0.position == 30 })
        }
    }

    @Test func verifyFindsIndexInconsistenciesAndGaps() throws {
        try withLog { (log: EventLog) throws in
            try filledLog(log, count: 10, seed: 2)
            let event = try #require(try log.read(from: 4, limit: 1).first)
            try log.environment.write { txn in
                try txn.delete(log.eventIDs, event.eventID)
                try txn.delete(log.streamIndex, (event.key, event.streamVersion))
            }
            let kinds = Set(try log.verify().faults.filter { $0.position == 4 }.map(\.kind))
            #expect(kinds == [.eventIDIndex, .streamIndex])
            try log.environment.write { try $0.delete(log.events, 7) }
            let report = try log.verify()
            #expect(report.faults.contains { $0.position == 8 && $0.kind == .positionGap })
            #expect(report.firstBadPosition == 4)
        }
    }
}
