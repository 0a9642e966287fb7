import Foundation
import ReadingEvents
import Testing
@testable import EventStoreLMDB

@Suite struct EventLogReadTests {
    @Test func readForwardBackwardStreamAndByID() throws {
        var rng = SplitMix64(seed: 11)
        try withLog { (log: EventLog) throws in
            let appended: [(NewEvent, String)] = (0..<2500).map { i in  // more than two read chunks
                (randomEvents(1, using: &rng)[0], "stream-\(i % 3)")
            }
            try log.environment.write { txn in
                for (event, stream) in appended { try log.append([event], to: stream, in: txn) }
            }
            let forward = try log.read(from: 1)
            #expect(forward.count == 2500)
            #expect(forward.map(\.payload) == appended.map(\.0.payload))
            #expect(forward.map(\.eventID) == appended.map(\.0.eventID))
            #expect(try log.read(from: 2000, limit: 3).map(\.position) == [2000, 2001, 2002])
            #expect(try log.read(from: 2499, limit: 10).map(\.position) == [2499, 2500])
            #expect(try log.read(from: 2501, limit: 10).isEmpty)
            #expect(try log.readBackward(limit: 3).map(\.position) == [2500, 2499, 2498])
            #expect(try log.readBackward(from: 1100, limit: 1200).map(\.position) == Array((1...1100).reversed()))
            #expect(try log.readBackward(from: 2, limit: 10).map(\.position) == [2, 1])
            let stream1 = try log.readStream("stream-1")
            #expect(stream1.map(\.position) == Array(stride(from: 2, through: 2500, by: 3)))
            #expect(stream1.map(\.streamVersion) == Array(1...UInt64(stream1.count)))
            #expect(try log.readStream("stream-1", from: 5, limit: 2).map(\.streamVersion) == [5, 6])
            #expect(try log.readStream("stream-").isEmpty)  // a prefix of a name is another stream
            #expect(try log.lastPosition() == 2500)
            #expect(try log.event(withID: appended[1234].0.eventID)?.position == 1235)
            #expect(try log.event(withID: UUID()) == nil)
            // prevHash chains records: position 1 starts from zeros.
            #expect(forward[0].prevHash == [UInt8](repeating: 0, count: 16))
            #expect(forward[1].prevHash != forward[0].prevHash)
        }
    }

    @Test func recordsRoundTripThroughTheDocumentedLayout() throws {
        let id = UUID()
        // A named stream: kind 3, a 2-byte length, the UTF-8 bytes.
        let bytes = EventRecord.encode(
            position: 7, streamVersion: 3, eventID: id, streamKey: try StreamKey(name: "bé").encoded(), payload: [9, 8],
            prevHash: Array(repeating: 1, count: 16))
        #expect(bytes[0] == 2)
        #expect(Array(bytes[21..<29]) == [0, 0, 0, 0, 0, 0, 0, 7])
        #expect(Array(bytes[29..<37]) == [0, 0, 0, 0, 0, 0, 0, 3])
        #expect(Array(bytes[37..<53]) == EventRecord.uuidBytes(id))
        #expect(Array(bytes[53..<56]) == [3, 0, 3])
        #expect(Array(bytes[56...]) == Array("bé".utf8) + [9, 8])
        let crc = bytes[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(crc == CRC32C.checksum(bytes[5...]))
        let event = try bytes.withUnsafeBytes { try EventRecord.decode($0, key: 7) }
        #expect(event == RecordedEvent(
            position: 7, eventID: id, stream: "bé", streamVersion: 3, payload: [9, 8], prevHash: Array(repeating: 1, count: 16)))

        // A book stream: kind 2, the reader's and the book's 16 bytes; its text names the same key.
        var rng = SplitMix64(seed: 33)
        let reader = try #require(ReaderID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        let book = try #require(BookID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        let key = StreamKey(.book(reader: reader, book: book))
        #expect(StreamKey(name: key.description) == key)
        let bookRecord = EventRecord.encode(
            position: 8, streamVersion: 1, eventID: id, streamKey: try key.encoded(), payload: [1], prevHash: EventRecord.zeroHash)
        #expect(bookRecord.count == 53 + 33 + 1)
        #expect(Array(bookRecord[53..<86]) == [2] + reader.bytes + book.bytes)
        let decoded = try bookRecord.withUnsafeBytes { try EventRecord.decode($0, key: 8) }
        #expect(decoded.key == key && decoded.key.streamID == .book(reader: reader, book: book) && decoded.payload == [1])

        // The record layout of formats 1 and 2 is read only by the migration.
        let legacy = EventRecord.encodeLegacy(
            position: 8, streamVersion: 1, eventID: id, stream: key.description, payload: [1], prevHash: EventRecord.zeroHash)
        #expect(legacy[0] == 1 && Array(legacy[53..<55]) == [0, 78])
        let error = #expect(throws: EventStoreError.self) { try legacy.withUnsafeBytes { try EventRecord.decode($0, key: 8) } }
        #expect(error?.description.contains("unknown record format 1") == true)
        let migrated = try legacy.withUnsafeBytes { try EventRecord.inspectLegacy($0, key: 8).get() }
        #expect(migrated == decoded)
    }
}
