import Crypto
import Foundation
import LMDB

/// The stored bytes of one event, and their checks.
///
/// Layout of log format 3 (record format byte 2; all integers big-endian):
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | record format (2) |
/// | 1 | 4 | CRC-32C of every byte after this field |
/// | 5 | 16 | prevHash: first 16 bytes of SHA-256 of the previous record's bytes (zeros at 1) |
/// | 21 | 8 | position |
/// | 29 | 8 | stream version |
/// | 37 | 16 | event ID |
/// | 53 | k | stream key (``StreamKey``): 33 bytes for a reader's or a book's stream, 3 + n for a named one |
/// | 53+k | rest | payload |
///
/// Logs of formats 1 and 2 wrote record format 1: the same first 53 bytes, then a 2-byte stream
/// name length n and the name's n UTF-8 bytes (see ``encodeLegacy(position:streamVersion:eventID:stream:payload:prevHash:)``);
/// they are read only to migrate them (``inspectLegacy(_:key:)``).
enum EventRecord {
    static let format: UInt8 = 2
    /// The record format of logs of formats 1 and 2 (a text stream name).
    static let legacyFormat: UInt8 = 1
    /// The bytes before the stream field.
    static let fixedSize = 53
    static let hashSize = 16
    static let zeroHash = [UInt8](repeating: 0, count: hashSize)

    /// The record bytes of an event of the stream whose key bytes are `streamKey`
    /// (``StreamKey/encoded()``).
    static func encode(
        position: UInt64, streamVersion: UInt64, eventID: UUID, streamKey: [UInt8],
        payload: [UInt8], prevHash: [UInt8]
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fixedSize + streamKey.count + payload.count)
        appendFixedFields(to: &bytes, format: format, position: position, streamVersion: streamVersion,
                          eventID: eventID, prevHash: prevHash)
        bytes.append(contentsOf: streamKey)
        bytes.append(contentsOf: payload)
        sealChecksum(&bytes)
        return bytes
    }

    /// The record bytes as logs of formats 1 and 2 wrote them (a text stream name): kept for
    /// tests that fabricate such logs to check their migration.
    static func encodeLegacy(
        position: UInt64, streamVersion: UInt64, eventID: UUID, stream: String,
        payload: [UInt8], prevHash: [UInt8]
    ) -> [UInt8] {
        let streamBytes = Array(stream.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fixedSize + 2 + streamBytes.count + payload.count)
        appendFixedFields(to: &bytes, format: legacyFormat, position: position, streamVersion: streamVersion,
                          eventID: eventID, prevHash: prevHash)
        bytes.append(UInt8(streamBytes.count >> 8))
        bytes.append(UInt8(streamBytes.count & 0xFF))
        bytes.append(contentsOf: streamBytes)
        bytes.append(contentsOf: payload)
        sealChecksum(&bytes)
        return bytes
    }

    private static func appendFixedFields(
        to bytes: inout [UInt8], format: UInt8, position: UInt64, streamVersion: UInt64, eventID: UUID, prevHash: [UInt8]
    ) {
        // Each field in place: no array of its own (four a record before, issue 37).
        bytes.append(format)
        BigEndianUInt32.encode(0, into: &bytes)  // the CRC-32C, sealed below
        bytes.append(contentsOf: prevHash)
        BigEndianUInt64.encode(position, into: &bytes)
        BigEndianUInt64.encode(streamVersion, into: &bytes)
        UUIDKey.encode(eventID, into: &bytes)
    }

    /// Writes the CRC-32C of every byte after the checksum field into it.
    private static func sealChecksum(_ bytes: inout [UInt8]) {
        let crc = CRC32C.checksum(bytes[5...])
        bytes[1] = UInt8(crc >> 24)
        bytes[2] = UInt8(crc >> 16 & 0xFF)
        bytes[3] = UInt8(crc >> 8 & 0xFF)
        bytes[4] = UInt8(crc & 0xFF)
    }

    /// Decodes and checks the record stored under `key`; any damage is a `corruptRecord` error.
    static func decode(_ bytes: UnsafeRawBufferPointer, key: UInt64) throws(EventStoreError) -> RecordedEvent {
        switch inspect(bytes, key: key) {
        case .success(let event): return event
        case .failure(let damage): throw EventStoreError.corruptRecord(position: key, reason: damage.reason)
        }
    }

    /// Checks the record stored under `key` and reads it in place (``inspectInPlace(_:key:)``); any
    /// damage is the same `corruptRecord` error as ``decode(_:key:)``'s.
    static func decodeInPlace(_ bytes: UnsafeRawBufferPointer, key: UInt64) throws(EventStoreError) -> InPlace {
        switch inspectInPlace(bytes, key: key) {
        case .success(let fields): return fields
        case .failure(let damage): throw EventStoreError.corruptRecord(position: key, reason: damage.reason)
        }
    }

    /// What is wrong with a record.
    struct Damage: Error {
        let kind: ChainFault.Kind
        let reason: String
    }

    /// Decodes and checks a record of log format 3, reporting the kind of damage.
    static func inspect(_ bytes: UnsafeRawBufferPointer, key: UInt64) -> Result<RecordedEvent, Damage> {
        inspectInPlace(bytes, key: key).map { fields in
            RecordedEvent(position: key, eventID: fields.eventID, key: fields.stream, streamVersion: fields.streamVersion,
                          payload: Array(fields.payload), prevHash: Array(bytes[5..<21]))
        }
    }

    /// A checked record of log format 3 whose payload is read where it lies (``inspectInPlace(_:key:)``).
    ///
    /// Not `Sendable`: `payload` points into a transaction's memory map.
    struct InPlace {
        /// The event's ID.
        let eventID: UUID
        /// The event's stream.
        let stream: StreamKey
        /// The event's version in its stream.
        let streamVersion: UInt64
        /// The payload bytes, valid only as long as the bytes the record was read from.
        let payload: UnsafeRawBufferPointer
    }

    /// The same checks as ``inspect(_:key:)``, without copying the payload and the previous hash
    /// into arrays: for a caller that decodes the event at once (a rebuild's fold worker; the two
    /// arrays and their release cost about 900 instructions an event, issue 37).
    static func inspectInPlace(_ bytes: UnsafeRawBufferPointer, key: UInt64) -> Result<InPlace, Damage> {
        if case .failure(let damage) = checkFixedFields(bytes, key: key, format: format) { return .failure(damage) }
        let stream: StreamKey, streamSize: Int
        do {
            (stream, streamSize) = try StreamKey.decodePrefix(of: UnsafeRawBufferPointer(rebasing: bytes[fixedSize...]))
        } catch {
            return .failure(Damage(kind: .malformed, reason: "stream field: \(error.rule)"))
        }
        return .success(InPlace(eventID: uuid(bytes, at: 37), stream: stream, streamVersion: readUInt64(bytes, at: 29),
                                payload: UnsafeRawBufferPointer(rebasing: bytes[(fixedSize + streamSize)...])))
    }

    /// Decodes and checks a record of log format 1 or 2 (record format 1, a text stream name),
    /// for the migration to format 3.
    static func inspectLegacy(_ bytes: UnsafeRawBufferPointer, key: UInt64) -> Result<RecordedEvent, Damage> {
        if case .failure(let damage) = checkFixedFields(bytes, key: key, format: legacyFormat) { return .failure(damage) }
        guard bytes.count >= fixedSize + 2 else {
            return .failure(Damage(kind: .malformed, reason: "truncated: \(bytes.count) bytes, the header alone is \(fixedSize + 2)"))
        }
        let streamLength = Int(bytes[fixedSize]) << 8 | Int(bytes[fixedSize + 1])
        let nameStart = fixedSize + 2
        guard nameStart + streamLength <= bytes.count else {
            return .failure(Damage(kind: .malformed, reason: "truncated stream name"))
        }
        guard let name = String(validating: bytes[nameStart..<(nameStart + streamLength)], as: UTF8.self) else {
            return .failure(Damage(kind: .malformed, reason: "stream name is not UTF-8"))
        }
        return .success(recordedEvent(bytes, key: key, stream: StreamKey(name: name), payloadOffset: nameStart + streamLength))
    }

    /// Checks the length, the record format, the checksum and the position of a record.
    private static func checkFixedFields(_ bytes: UnsafeRawBufferPointer, key: UInt64, format: UInt8) -> Result<Void, Damage> {
        guard bytes.count > fixedSize else {
            return .failure(Damage(kind: .malformed, reason: "truncated: \(bytes.count) bytes, the header alone is more than \(fixedSize)"))
        }
        guard bytes[0] == format else {
            let hint = bytes[0] == legacyFormat ? " (a record of log format 1 or 2: the log needs migrating)" : ""
            return .failure(Damage(kind: .malformed, reason: "unknown record format \(bytes[0])\(hint), expected \(format)"))
        }
        let stored = readUInt32(bytes, at: 1)
        let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[5...]))
        guard stored == computed else {
            return .failure(Damage(kind: .checksum, reason: "checksum mismatch (stored \(hex(stored)), computed \(hex(computed)))"))
        }
        let position = readUInt64(bytes, at: 21)
        guard position == key else {
            return .failure(Damage(kind: .positionMismatch, reason: "position field \(position) does not match its key"))
        }
        return .success(())
    }

    private static func recordedEvent(
        _ bytes: UnsafeRawBufferPointer, key: UInt64, stream: StreamKey, payloadOffset: Int
    ) -> RecordedEvent {
        RecordedEvent(
            position: key,
            eventID: uuid(bytes, at: 37),
            key: stream,
            streamVersion: readUInt64(bytes, at: 29),
            payload: Array(bytes[payloadOffset...]),
            prevHash: Array(bytes[5..<21]))
    }

    /// The chain hash of a record: the first 16 bytes of its SHA-256.
    static func hash<Bytes: DataProtocol>(_ bytes: Bytes) -> [UInt8] {
        // Copied from the digest's bytes in one step: `Array(digest.prefix(_:))` walked the digest
        // as a generic sequence (about 1,280 instructions an appended event, issue 37).
        SHA256.hash(data: bytes).withUnsafeBytes { Array($0.prefix(hashSize)) }
    }

    /// The 16 bytes of a UUID.
    static func uuidBytes(_ id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }

    /// The UUID in 16 bytes at `offset` (one unaligned load). Precondition: the caller checked
    /// that `bytes` holds them (a short buffer traps on the range check below, never reads past it).
    static func uuid(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UUID {
        precondition(offset >= 0 && offset + 16 <= bytes.count, "16 UUID bytes at \(offset) of \(bytes.count)")
        return UUID(uuid: bytes.loadUnaligned(fromByteOffset: offset, as: uuid_t.self))
    }

    static func readUInt64(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        bytes[offset..<(offset + 8)].reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func readUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func hex(_ value: UInt32) -> String {
        "0x" + String(value, radix: 16, uppercase: true)
    }
}
