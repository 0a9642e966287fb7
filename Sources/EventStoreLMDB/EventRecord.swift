import Crypto
import Foundation
import LMDB

/// The stored bytes of one event, and their checks.
///
/// Layout (all integers big-endian):
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | record format (1) |
/// | 1 | 4 | CRC-32C of every byte after this field |
/// | 5 | 16 | prevHash: first 16 bytes of SHA-256 of the previous record's bytes (zeros at 1) |
/// | 21 | 8 | position |
/// | 29 | 8 | stream version |
/// | 37 | 16 | event ID |
/// | 53 | 2 | stream length n |
/// | 55 | n | stream, UTF-8 |
/// | 55+n | rest | payload |
enum EventRecord {
    static let format: UInt8 = 1
    static let headerSize = 55
    static let hashSize = 16
    static let zeroHash = [UInt8](repeating: 0, count: hashSize)

    /// The record bytes of `event`.
    static func encode(
        position: UInt64, streamVersion: UInt64, eventID: UUID, stream: String,
        payload: [UInt8], prevHash: [UInt8]
    ) -> [UInt8] {
        let streamBytes = Array(stream.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerSize + streamBytes.count + payload.count)
        bytes.append(format)
        bytes.append(contentsOf: [0, 0, 0, 0])
        bytes.append(contentsOf: prevHash)
        bytes.append(contentsOf: BigEndianUInt64.encode(position))
        bytes.append(contentsOf: BigEndianUInt64.encode(streamVersion))
        bytes.append(contentsOf: uuidBytes(eventID))
        bytes.append(UInt8(streamBytes.count >> 8))
        bytes.append(UInt8(streamBytes.count & 0xFF))
        bytes.append(contentsOf: streamBytes)
        bytes.append(contentsOf: payload)
        let crc = CRC32C.checksum(bytes[5...])
        bytes[1] = UInt8(crc >> 24)
        bytes[2] = UInt8(crc >> 16 & 0xFF)
        bytes[3] = UInt8(crc >> 8 & 0xFF)
        bytes[4] = UInt8(crc & 0xFF)
        return bytes
    }

    /// Decodes and checks the record stored under `key`; any damage is a `corruptRecord` error.
    static func decode(_ bytes: UnsafeRawBufferPointer, key: UInt64) throws(EventStoreError) -> RecordedEvent {
        switch inspect(bytes, key: key) {
        case .success(let event): return event
        case .failure(let damage): throw EventStoreError.corruptRecord(position: key, reason: damage.reason)
        }
    }

    /// What is wrong with a record.
    struct Damage: Error {
        let kind: ChainFault.Kind
        let reason: String
    }

    /// Decodes and checks a record, reporting the kind of damage.
    static func inspect(_ bytes: UnsafeRawBufferPointer, key: UInt64) -> Result<RecordedEvent, Damage> {
        guard bytes.count >= headerSize else {
            return .failure(Damage(kind: .malformed, reason: "truncated: \(bytes.count) bytes, the header alone is \(headerSize)"))
        }
        guard bytes[0] == format else {
            return .failure(Damage(kind: .malformed, reason: "unknown record format \(bytes[0])"))
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
        let streamLength = Int(bytes[53]) << 8 | Int(bytes[54])
        guard headerSize + streamLength <= bytes.count else {
            return .failure(Damage(kind: .malformed, reason: "truncated stream name"))
        }
        guard let stream = String(validating: bytes[55..<(55 + streamLength)], as: UTF8.self) else {
            return .failure(Damage(kind: .malformed, reason: "stream name is not UTF-8"))
        }
        return .success(RecordedEvent(
            position: position,
            eventID: uuid(bytes, at: 37),
            stream: stream,
            streamVersion: readUInt64(bytes, at: 29),
            payload: Array(bytes[(55 + streamLength)...]),
            prevHash: Array(bytes[5..<21])))
    }

    /// The chain hash of a record: the first 16 bytes of its SHA-256.
    static func hash<Bytes: DataProtocol>(_ bytes: Bytes) -> [UInt8] {
        Array(SHA256.hash(data: bytes).prefix(hashSize))
    }

    /// The 16 bytes of a UUID.
    static func uuidBytes(_ id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }

    /// The UUID in 16 bytes at `offset`.
    static func uuid(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UUID {
        // Zeroes, not `UUID().uuid`: a random UUID reads the random device on every record.
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 16)]))
        }
        return UUID(uuid: value)
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
