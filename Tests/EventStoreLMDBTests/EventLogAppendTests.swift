import Foundation
import TestSupport
import ReadingEvents
import Testing
@_spi(RawLog) @testable import EventStoreLMDB
import LMDB

func withLog(_ options: LMDBEnvironmentOptions = LMDBEnvironmentOptions(), _ body: (EventLog) throws -> Void) throws {
    try withTempDirectory { dir in
        let log = try EventLog.open(at: dir.child("store"), options: options)
        try body(log)
    }
}

@Suite struct EventLogAppendTests {
    @Test func positionsAreGaplessFromOneAndStreamVersionsCountPerStream() throws {
        var rng = SplitMix64(seed: 1)
        try withLog { (log: EventLog) throws in
            #expect(try log.lastPosition() == 0)
            var expectedVersions: [String: UInt64] = [:]
            var position: UInt64 = 0
            for _ in 0..<40 {
                let stream = ["reader", "book-1", "book-2"][Int.random(in: 0..<3, using: &rng)]
                let batch = randomEvents(Int.random(in: 1...5, using: &rng), using: &rng)
                let result = try log.append(batch, to: stream)
                for entry in result.entries {
                    position += 1
                    expectedVersions[stream, default: 0] += 1
                    #expect(entry.position == position)
                    #expect(entry.streamVersion == expectedVersions[stream])
                    #expect(entry.isNew)
                }
                #expect(result.lastPosition == position)
            }
            let all = try log.read()
            #expect(all.map(\.position) == Array(1...position))
            for (stream, version) in expectedVersions {
                #expect(try log.streamVersion(of: stream) == version)
                #expect(try log.readStream(stream).map(\.streamVersion) == Array(1...version))
            }
        }
    }

    @Test func aBatchIsAllOrNothing() throws {
        try withLog { (log: EventLog) throws in
            try log.append([NewEvent(payload: [1]), NewEvent(payload: [2])], to: "s")
            // A multi-stream batch whose second part conflicts writes nothing at all.
            let parts = [
                StreamAppend(stream: "other", expectedVersion: .noStream, events: [NewEvent(payload: [3])]),
                StreamAppend(stream: "s", expectedVersion: .exactly(1), events: [NewEvent(payload: [4])]),
            ]
            #expect(throws: EventStoreError.wrongExpectedVersion(stream: "s", expected: .exactly(1), actual: 2)) {
                try log.append(parts)
            }
            #expect(try log.lastPosition() == 2)
            #expect(try log.streamVersion(of: "other") == 0)
            #expect(try log.readStream("other").isEmpty)
            // A failing put inside the caller's transaction aborts the appended events with it.
            let extra = try log.openDatabase(named: "model", keys: UTF8String.self, values: UTF8String.self)
            #expect(throws: TestFailure(tag: 9)) {
                try log.environment.write { txn in
                    try log.append([NewEvent(payload: [5])], to: "s", in: txn)
                    try txn.put(extra, "k", "v")
                    throw TestFailure(tag: 9)
                }
            }
            #expect(try log.lastPosition() == 2)
            #expect(try log.environment.read { try $0.get(extra, "k") } == nil)
            // And a successful one commits both.
            try log.environment.write { txn in
                try log.append([NewEvent(payload: [5])], to: "s", in: txn)
                try txn.put(extra, "k", "v")
            }
            #expect(try log.lastPosition() == 3)
            #expect(try log.environment.read { try $0.get(extra, "k") } == "v")
            // Multi-stream success: both parts, in order, with a stream named twice.
            let result = try log.append([
                StreamAppend(stream: "other", expectedVersion: .noStream, events: [NewEvent(payload: [6])]),
                StreamAppend(stream: "other", expectedVersion: .exactly(1), events: [NewEvent(payload: [7])]),
            ])
            #expect(result.positions == [4, 5])
            #expect(try log.streamVersion(of: "other") == 2)
        }
    }

    /// One append of many one-event parts (the form the store's batches take), the streams
    /// named again and again and by both of a book stream's names: each part is checked against,
    /// and continues, the version its stream's earlier parts left (the append remembers them),
    /// a repeated event ID is answered with its first position, and a conflict late in the
    /// batch writes nothing.
    /// The append pipeline's form (event IDs checked new by the caller in the same transaction)
    /// writes exactly what the plain append writes, records, hash chain and stream versions alike,
    /// and an ID the caller let through wrongly fails the append naming the field, with nothing
    /// written (the event-ID index is still written with `MDB_NOOVERWRITE`).
    @Test func anAppendOfIDsCheckedNewWritesWhatThePlainAppendWritesAndRefusesAHeldID() throws {
        var rng = SplitMix64(seed: 37)
        let streams = ["a", "b", "c"]
        let rounds: [[StreamAppend]] = (0..<6).map { _ in
            (0..<Int.random(in: 1...20, using: &rng)).map { _ in
                StreamAppend(stream: streams.randomElement(using: &rng)!, expectedVersion: .any,
                             events: randomEvents(Int.random(in: 1...3, using: &rng), using: &rng))
            }
        }
        try withLog { (plain: EventLog) throws in
            try withLog { (checked: EventLog) throws in
                for parts in rounds {
                    let expected = try plain.environment.write { txn in try plain.append(parts, in: txn) }
                    let result = try checked.environment.write { txn in try checked.append(parts, in: txn, idsCheckedNew: true) }
                    #expect(result.entries == expected.entries)
                    #expect(result.lastPosition == expected.lastPosition)
                }
                #expect(try checked.read() == plain.read())
                #expect(try checked.verify().isIntact)
                for stream in streams { #expect(try checked.streamVersion(of: stream) == plain.streamVersion(of: stream)) }

                let held = try checked.read().randomElement(using: &rng)!
                let fresh = randomEvents(1, using: &rng)[0]
                let last = try checked.lastPosition()
                let parts = [StreamAppend(stream: "a", expectedVersion: .any, events: [fresh]),
                             StreamAppend(stream: "b", expectedVersion: .any, events: [NewEvent(eventID: held.eventID, payload: [7])])]
                do {
                    _ = try checked.environment.write { txn in try checked.append(parts, in: txn, idsCheckedNew: true) }
                    Issue.record("a held event ID was appended again")
                } catch EventStoreError.invalidArgument(let field, let detail) {
                    #expect(field == "eventID")
                    #expect(detail.contains("\(held.eventID)"))
                }
                #expect(try checked.lastPosition() == last)
                #expect(try checked.event(withID: fresh.eventID) == nil)
                #expect(try checked.verify().isIntact)
            }
        }
    }

    @Test func manyOneEventPartsOfOneAppendContinueEachStream() throws {
        var rng = SplitMix64(seed: 23)
        let reader = ReaderID(), book = BookID()
        let bookStream = StreamID.book(reader: reader, book: book)
        let names = ["a", "b", bookStream.description, "reader-x"]
        try withLog { (log: EventLog) throws in
            try log.append(randomEvents(3, using: &rng), to: "a")
            try log.append(randomEvents(2, using: &rng), to: bookStream.description)
            var versions: [String: UInt64] = ["a": 3, bookStream.description: 2]
            var committed = versions
            var position: UInt64 = 5
            for round in 0..<5 {
                var parts: [StreamAppend] = []
                var expected: [(position: UInt64, version: UInt64, isNew: Bool)] = []
                var sent: [NewEvent] = []
                for _ in 0..<60 {
                    let name = names.randomElement(using: &rng)!
                    if let earlier = sent.randomElement(using: &rng), Int.random(in: 0..<8, using: &rng) == 0 {
                        // An event of this batch again: its first entry, nothing written.
                        let first = expected[sent.firstIndex { $0.eventID == earlier.eventID }!]
                        parts.append(StreamAppend(stream: name, expectedVersion: .any, events: [earlier]))
                        expected.append((first.position, first.version, false))
                        sent.append(earlier)
                        continue
                    }
                    let event = randomEvents(1, using: &rng)[0]
                    let check: ExpectedVersion = Bool.random(using: &rng) ? .exactly(versions[name, default: 0]) : .any
                    let key = name == bookStream.description && Bool.random(using: &rng) ? StreamKey(bookStream) : StreamKey(name: name)
                    parts.append(StreamAppend(key: key, expectedVersion: check, events: [event]))
                    position += 1
                    versions[name, default: 0] += 1
                    expected.append((position, versions[name]!, true))
                    sent.append(event)
                }
                if round == 4 {
                    // A stale version at the end: the whole batch is refused.
                    parts.append(StreamAppend(stream: "a", expectedVersion: .exactly(versions["a"]! - 1), events: randomEvents(1, using: &rng)))
                    let last = try log.lastPosition()
                    #expect(throws: EventStoreError.self) { try log.append(parts) }
                    #expect(try log.lastPosition() == last)
                    break
                }
                let result = try log.append(parts)
                #expect(result.entries.map(\.position) == expected.map(\.position))
                #expect(result.entries.map(\.streamVersion) == expected.map(\.version))
                #expect(result.entries.map(\.isNew) == expected.map(\.isNew))
                committed = versions
            }
            #expect(try log.lastPosition() == committed.values.reduce(0, +))
            for name in names {
                let version = committed[name, default: 0]
                #expect(try log.streamVersion(of: name) == version, "\(name)")
                #expect(try log.readStream(name).map(\.streamVersion) == (version == 0 ? [] : Array(1...version)), "\(name)")
            }
            #expect(try log.verify().isIntact)
        }
    }

    @Test func expectedVersions() throws {
        try withLog { (log: EventLog) throws in
            try log.append(NewEvent(payload: [1]), to: "a", expectedVersion: .noStream)
            try log.append(NewEvent(payload: [2]), to: "a", expectedVersion: .exactly(1))
            try log.append(NewEvent(payload: [3]), to: "a", expectedVersion: .any)
            try log.append(NewEvent(payload: [1]), to: "b", expectedVersion: .exactly(0))
            let conflicts: [(ExpectedVersion, String, UInt64?)] = [
                (.noStream, "a", 3), (.exactly(2), "a", 3), (.exactly(4), "a", 3), (.exactly(1), "new", nil),
            ]
            for (expected, stream, actual) in conflicts {
                #expect(throws: EventStoreError.wrongExpectedVersion(stream: stream, expected: expected, actual: actual)) {
                    try log.append([NewEvent(payload: [9]), NewEvent(payload: [9])], to: stream, expectedVersion: expected)
                }
                #expect(try log.lastPosition() == 4)
                #expect(try log.streamVersion(of: "a") == 3)
                #expect(try log.readStream("a").count == 3)
                #expect(try log.streamVersion(of: "new") == 0)
            }
            #expect(try log.verify().isIntact)
        }
    }

    @Test func appendingAStoredIDIsIdempotent() throws {
        try withLog { (log: EventLog) throws in
            let first = NewEvent(payload: [1])
            let second = NewEvent(payload: [2])
            let written = try log.append([first, second], to: "s")
            #expect(written.entries.map(\.isNew) == [true, true])
            // A retry of the whole batch: nothing written, stored positions back, version not checked.
            let retry = try log.append([first, second], to: "s", expectedVersion: .noStream)
            #expect(retry.positions == [1, 2])
            #expect(retry.entries.map(\.isNew) == [false, false])
            #expect(retry.entries.map(\.streamVersion) == [1, 2])
            #expect(try log.lastPosition() == 2)
            // A single retry.
            #expect(try log.append(second, to: "s").positions == [2])
            // A mixed batch: old ones keep their positions, new ones are written after the check.
            let third = NewEvent(payload: [3])
            let mixed = try log.append([first, third, second, third], to: "s", expectedVersion: .exactly(2))
            #expect(mixed.positions == [1, 3, 2, 3])
            #expect(mixed.entries.map(\.isNew) == [false, true, false, false])
            #expect(try log.lastPosition() == 3)
            #expect(try log.streamVersion(of: "s") == 3)
            // The version check applies to a mixed batch with new events.
            #expect(throws: EventStoreError.self) {
                try log.append([first, NewEvent(payload: [4])], to: "s", expectedVersion: .exactly(2))
            }
            #expect(try log.lastPosition() == 3)
            #expect(try log.event(withID: third.eventID)?.position == 3)
            #expect(try log.verify().isIntact)
        }
    }

    @Test func invalidStreamNamesAreRefused() throws {
        try withLog { (log: EventLog) throws in
            for name in ["", "a\u{0}b", String(repeating: "x", count: EventLog.maxStreamNameBytes + 1)] {
                #expect(throws: EventStoreError.invalidStreamName(name)) { try log.append(NewEvent(payload: []), to: name) }
            }
            #expect(throws: EventStoreError.reservedDatabaseName("events")) {
                _ = try log.openDatabase(named: "events", keys: RawBytes.self, values: RawBytes.self)
            }
            #expect(try log.lastPosition() == 0)
        }
    }

    @Test func aLargeAppendGrowsATinyMap() throws {
        var rng = SplitMix64(seed: 3)
        try withLog(LMDBEnvironmentOptions(mapSize: 256 << 10)) { (log: EventLog) throws in
            let payload = (0..<8192).map { _ in UInt8.random(in: 0...255, using: &rng) }
            for batch in 0..<8 {
                let events = (0..<64).map { _ in NewEvent(payload: payload) }
                #expect(try log.append(events, to: "big-\(batch % 2)").writtenCount == 64)
            }
            #expect(try log.lastPosition() == 512)  // 512 x 8 KiB = 4 MiB through a 256 KiB map
            #expect(log.environment.mapSize > 4 << 20)
            #expect(try log.verify().isIntact)
        }
    }

    @Test func threadsAppendAndReadConcurrentlyWhileTheMapGrows() throws {
        try withLog(LMDBEnvironmentOptions(mapSize: 256 << 10)) { (log: EventLog) throws in
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { worker in
                do {
                    if worker < 4 {
                        for batch in 0..<20 {
                            let events = (0..<10).map { _ in NewEvent(payload: [UInt8](repeating: UInt8(worker), count: 2048)) }
                            try log.append(events, to: "w\(worker)")
                            _ = batch
                        }
                    } else {
                        for _ in 0..<50 {
                            let events = try log.read()
                            if events.map(\.position) != Array(0..<UInt64(events.count)).map({ $0 + 1 }) {
                                failures.withLock { $0.append("gap in a concurrent read") }
                            }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            #expect(try log.lastPosition() == 800)
            #expect(log.environment.mapSize > 1 << 20)
            #expect(try log.verify().isIntact)
        }
    }
}
