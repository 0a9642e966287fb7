import Foundation
import LMDB
import ReadingEvents

/// An event of another replica that a merge could not take, kept aside with the reason instead
/// of stopping the sync (see ``ReadingStore/merge(_:)``).
///
/// `Sendable`: values.
public struct QuarantinedEvent: Hashable, Sendable, CustomStringConvertible {
    /// The event's ID.
    public let eventID: EventID
    /// Why no receiver can take it: the field, what is wrong, and the rule.
    public let reason: String
    /// The event as it arrived, in the sync record format (``ReadingEvents/BinaryEventCodec/encodeRecord(_:)``).
    public let record: [UInt8]
    /// The record decoded by this build, or `nil` when this build's decoder refuses it (a value
    /// out of range): ``ReadingStore/retryQuarantine()`` leaves such an entry as it is.
    public let envelope: EventEnvelope?

    /// Creates an entry.
    public init(eventID: EventID, reason: String, record: [UInt8], envelope: EventEnvelope?) {
        self.eventID = eventID
        self.reason = reason
        self.record = record
        self.envelope = envelope
    }

    /// "event ID (origin): reason".
    public var description: String {
        "\(eventID) (\(envelope?.origin.map(String.init(describing:)) ?? "no origin")): \(reason)"
    }
}

extension ReadingStore {
    /// The events merges kept aside, in key order (by origin; events without an origin last).
    public func quarantine() throws -> [QuarantinedEvent] {
        try log.environment.read { txn in try quarantine(txn) }
    }

    func quarantine(_ txn: ReadTransaction) throws -> [QuarantinedEvent] {
        var entries: [QuarantinedEvent] = []
        try txn.forEach(sync.quarantine) { key, value in
            entries.append(try Self.decodeQuarantined(key: key, value: value))
            return true
        }
        return entries
    }

    /// Merges the quarantine again, in one write transaction: events a merge now takes (after an
    /// upgrade that accepts more, or once the event they conflicted with is understood) leave it;
    /// the others stay, with their reason as of now.
    @discardableResult
    public func retryQuarantine() throws -> MergeResult {
        let result = try log.environment.write { txn -> MergeResult in
            try catchUpAll(txn)
            let entries = try quarantine(txn)
            // Entries this build cannot decode stay as they are; the others are merged again.
            let retried = entries.compactMap(\.envelope)
            var keys: [[UInt8]] = []
            try txn.forEach(sync.quarantine) { key, value in
                if try Self.decodeQuarantined(key: key, value: value).envelope != nil { keys.append(key) }
                return true
            }
            for key in keys { try txn.delete(sync.quarantine, key) }
            return try append(retried, from: .replicated(readers: nil), txn).merge
        }
        if result.appended > 0 { log.notifyObservers() }
        return result
    }

    /// Keeps `entries` in the quarantine (an entry already there is replaced); returns how many.
    /// An entry that holds its origin's slot (the replica's sequence names no other event, and the
    /// replica is not this store's) is keyed by its origin, and the replica's head moves over it,
    /// so peers do not send it again; the others are keyed by event ID and origin.
    func keepInQuarantine(_ entries: [(envelope: EventEnvelope, reason: String, holdsSlot: Bool)], _ txn: WriteTransaction) throws -> Int {
        var slots: [EventOrigin] = []
        for (envelope, reason, holdsSlot) in entries {
            let reasonBytes = Array(reason.utf8.prefix(4_096))
            let value = BigEndianUInt32.encode(UInt32(reasonBytes.count)) + reasonBytes + envelope.eventID.bytes
                + BinaryEventCodec.encodeRecord(envelope)
            if holdsSlot, let origin = envelope.origin, origin.replica != .provisional, origin.replica != replica {
                try txn.put(sync.quarantine, Self.quarantineSlot(origin), value)
                slots.append(origin)
            } else {
                let origin = envelope.origin.map { BigEndianUInt64.encode($0.stamp) + $0.replica.bytes + BigEndianUInt64.encode($0.sequence) } ?? []
                try txn.put(sync.quarantine, [0] + envelope.eventID.bytes + origin, value)
            }
        }
        try moveHeads(over: slots, txn)
        return entries.count
    }

    /// The quarantine's key of an entry that holds its origin's slot: `0x01`, the replica and the
    /// sequence (other entries: `0x00`, the event ID and the origin, if any).
    static func quarantineSlot(_ origin: EventOrigin) -> [UInt8] {
        [1] + origin.replica.bytes + BigEndianUInt64.encode(origin.sequence)
    }

    static func decodeQuarantined(key: [UInt8], value: [UInt8]) throws -> QuarantinedEvent {
        func damaged(_ why: String) -> EventStoreError {
            EventStoreError.corruptView(detail: "sync.quarantine: an entry \(why)")
        }
        guard value.count >= 4 else { throw damaged("is shorter than its header") }
        let length = Int(try value.withUnsafeBytes { try BigEndianUInt32.decode(UnsafeRawBufferPointer(rebasing: $0[0..<4])) })
        guard value.count >= 4 + length else { throw damaged("has a reason longer than the entry") }
        guard value.count >= 4 + length + 16, let id = UUID(bytes: Array(value[(4 + length)..<(4 + length + 16)])) else {
            throw damaged("has no event ID")
        }
        let reason = String(decoding: value[4..<(4 + length)], as: UTF8.self)
        let record = Array(value[(4 + length + 16)...])
        return QuarantinedEvent(eventID: EventID(id), reason: reason, record: record,
                                envelope: try? BinaryEventCodec.decodeRecord(record))
    }
}
