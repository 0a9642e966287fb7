import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing
@testable import EventStoreLMDB

#if canImport(Glibc)
import Glibc
#endif

/// The facade's durability: catch-up at open, rebuild equals incremental, time-zone independence,
/// a killed writer, a crash in the middle of a rebuild. Heavy and multi-process: run one at a time.
@Suite(.serialized) struct ReadingStoreDurabilityTests {
    typealias F = Facade

    /// The raw append another writer (an older build, a tool) would make: encoded envelopes, no fold.
    static func appendRaw(_ log: EventLog, _ envelopes: ArraySlice<EventEnvelope>, chunk: Int = 2_000) throws {
        var index = envelopes.startIndex
        while index < envelopes.endIndex {
            let part = envelopes[index..<min(envelopes.endIndex, index + chunk)].map { envelope in
                StreamAppend(stream: envelope.stream.description, expectedVersion: .any,
                             events: [NewEvent(eventID: envelope.eventID.uuid, payload: BinaryEventCodec.encode(envelope))])
            }
            try log.append(part)
            index += chunk
        }
    }

    /// A store filled with `history` through appendRecorded; returns its incremental digest. The
    /// store is released when this returns.
    static func makeStore(at url: URL, _ history: [EventEnvelope]) throws -> String {
        let store = try ReadingStore.open(at: url)
        try F.appendInChunks(store, history)
        #expect(try store.log.lastPosition() == UInt64(history.count))
        #expect(try store.viewCheckpoint() == UInt64(history.count))
        return try store.viewDigest()
    }

    // MARK: 4. catch-up at open

    @Test func openingAStoreWhoseViewsLagTheLogFoldsTheRest() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let history = F.history(readers: 3, days: 240, seed: 4)
            let split = history.count / 4
            #expect(history.count - split > EventLog.readChunkSize, "catch-up should need several chunks")
            do {
                let store = try ReadingStore.open(at: url)
                try F.appendInChunks(store, Array(history[..<split]))
                try Self.appendRaw(store.log, history[split...])
                #expect(try store.viewCheckpoint() == UInt64(split), "the raw appends were folded by someone")
                #expect(try store.log.lastPosition() == UInt64(history.count))
            }
            // Every reference is gone: the environment is closed and the path free again.
            let store = try ReadingStore.open(at: url)
            #expect(try store.viewCheckpoint() == store.log.lastPosition())
            let caughtUp = try store.viewDigest()
            let memory = try F.inMemoryViews(of: store)
            let readers = try store.readers()
            #expect(readers.count == 3)
            try store.withViews { views in
                for reader in readers {
                    try F.expectSameQueries(views, memory, reader: reader, asOf: F.at("2025-06-30T12:00:00Z"), zone: .utc,
                                            days: F.day("2024-12-25")...F.day("2025-09-01"))
                }
            }
            // catch-up also indexes the events it folds for the audit trail.
            let stored = try store.events()
            for reader in readers {
                let trail = try store.auditTrail(reader: reader)
                #expect(trail == stored.filter { $0.reader == reader })
                #expect(trail.map(\.eventID) == history.filter { $0.reader == reader }.map(\.eventID))
            }
            #expect(try store.rebuild().digest == caughtUp)
            #expect(try store.viewDigest() == caughtUp)
        }
    }

    // MARK: 5. rebuild equals incremental, at 100k events

    @Test func rebuildingAHundredThousandEventsGivesTheIncrementalViews() throws {
        try withTempDirectory { dir in
            let clock = ContinuousClock()
            var started = clock.now
            let history = F.history(readers: 24, days: 1_340, seed: 0x100_000)
            let generated = started.duration(to: clock.now)
            #expect(history.count >= 100_000, "the demo history has only \(history.count) events")
            started = clock.now
            let store = try ReadingStore.open(at: dir.child("store"))
            #expect(try F.appendInChunks(store, history, chunk: 2_000) == history.count)
            let appended = started.duration(to: clock.now)
            #expect(try store.log.lastPosition() == UInt64(history.count))
            #expect(try store.viewCheckpoint() == UInt64(history.count))
            let incremental = try store.viewDigest()
            started = clock.now
            var calls: [(UInt64, UInt64)] = []
            let first = try store.rebuild { calls.append(($0, $1)) }
            let rebuilt = started.duration(to: clock.now)
            #expect(first.events == UInt64(history.count), "the report counts every event")
            #expect(first.digest == incremental)
            #expect(try store.viewDigest() == incremental)
            // One call per write transaction of the pass: each takes whole readers until it has
            // folded a chunk, so every call but the last adds at least a chunk.
            let chunk = UInt64(ReadingStore.rebuildChunkSize)
            #expect(calls.count >= 2 && calls.count <= history.count / ReadingStore.rebuildChunkSize + 1, "\(calls)")
            #expect(zip(calls, calls.dropFirst()).dropLast().allSatisfy { $1.0 - $0.0 >= chunk }, "\(calls)")
            #expect(calls.first.map { $0.0 >= chunk } == true, "\(calls)")
            #expect(calls.allSatisfy { $0.1 == UInt64(history.count) })
            #expect(calls.last.map { $0.0 } == UInt64(history.count))
            let second = try store.rebuild()
            #expect(second.digest == incremental)
            #expect(second.events == UInt64(history.count))
            print("ReadingStore 100k: \(history.count) events; generate \(generated), appendRecorded+fold \(appended), rebuild \(rebuilt) (\(Int(first.eventsPerSecond)) events/s)")
        }
    }

    // MARK: 6. the machine's TZ does not matter

    @Test func rebuildDigestsAreTheSameUnderAnyMachineTimeZone() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let history = F.history(readers: 8, days: 240, seed: 6)
            let incremental = try Self.makeStore(at: url, history)
            var digests: [String: String] = [:]
            for zone in ["UTC", "Pacific/Kiritimati", "America/St_Johns"] {
                let copy = dir.child("copy-\(zone.replacingOccurrences(of: "/", with: "-"))")
                try FileManager.default.copyItem(at: url, to: copy)
                let child = try FacadeChild.run(["rebuild-digest", copy.path], environment: ["TZ": zone])
                #expect(child.status == 0, "TZ=\(zone): \(child.lines)")
                // Foundation names UTC "GMT": compare with what this process calls the zone.
                #expect(child.value("tz") == TimeZone(identifier: zone)?.identifier, "the child did not run in \(zone)")
                #expect(child.value("incremental") == incremental, "TZ=\(zone)")
                #expect(child.value("events") == "\(history.count)")
                digests[zone] = child.value("rebuilt")
            }
            #expect(Set(digests.values) == [incremental])
            #expect(digests.count == 3)
        }
    }

    // MARK: 7. a killed writer

    @Test func aKilledDemoWriterLeavesViewsConsistentWithTheLog() async throws {
        let trials = ProcessInfo.processInfo.environment["STORE_STRESS_TRIALS"].flatMap(Int.init) ?? 5
        let dir = TempDirectory()
        defer { dir.remove() }
        let url = dir.child("store")
        do { _ = try ReadingStore.open(at: url) }      // created here, so children never race to create it
        var rng = SplitMix64(seed: 0xFACADE_7)
        var killedMidway = 0
        var acknowledgedTotal = 0
        for trial in 0..<trials {
            let seed = rng.next() % 1_000_000
            let child = try HelperProcess(["demo-appends", url.path, "--chunk", "100", "--readers", "2", "--days", "1500",
                                           "--seed", "\(seed)"])
            let started = await child.waitForLine(timeout: .seconds(120)) { $0.hasPrefix("start ") }
            #expect(started, "trial \(trial): the child never started")
            // The kill comes after a random number of acknowledged chunks in the first half of the
            // history, then a random 0-20 ms into the next chunk: in the middle of the run whatever
            // the machine's speed (a fixed delay after the start let a faster writer finish first).
            let events = child.lines.first { $0.hasPrefix("start ") }.flatMap { Int($0.dropFirst("start ".count)) } ?? 0
            let chunks = max(2, (events + 99) / 100)
            let acknowledgedBeforeKill = Int.random(in: 1...(chunks / 2), using: &rng)
            let delay = Int.random(in: 0...20, using: &rng)
            child.kill9(afterLines: acknowledgedBeforeKill, timeout: .seconds(120), then: .milliseconds(delay),
                        stop: { $0 == "done" }) { $0.hasPrefix("ack ") }
            let status = child.waitForExit()
            let lines = child.lines
            if !lines.contains("done") {
                killedMidway += 1
                #expect(status == SIGKILL, "trial \(trial): \(lines.suffix(2))")
            }
            let acks = lines.filter { $0.hasPrefix("ack ") }
            acknowledgedTotal += acks.count
            try Self.checkAfterKill(url, acks: acks, trial: trial)
        }
        print("ReadingStore killed writer: \(trials) trials, \(killedMidway) killed mid-run, \(acknowledgedTotal) acknowledged chunks")
        #expect(killedMidway > 0, "no trial killed the writer in the middle")
        #expect(acknowledgedTotal > 0)
    }

    /// Reopens the store a killed writer left: views caught up, every acknowledged chunk present,
    /// views equal to a rebuild, log intact.
    static func checkAfterKill(_ url: URL, acks: [String], trial: Int) throws {
        let store = try ReadingStore.open(at: url)
        let last = try store.log.lastPosition()
        #expect(try store.viewCheckpoint() == last, "trial \(trial)")
        for ack in acks {
            let fields = ack.split(separator: " ")
            let position = UInt64(fields[1])!
            let stored = try store.log.event(withID: UUID(uuidString: String(fields[2]))!)
            #expect(stored?.position == position, "trial \(trial): acknowledged \(fields[2]) at \(position) is missing")
        }
        let digest = try store.viewDigest()
        #expect(try store.rebuild().digest == digest, "trial \(trial): views differ from a rebuild")
        let report = try store.log.verify()
        #expect(report.isIntact, "trial \(trial): \(report.faults.prefix(3))")
        let stored = try store.events()
        for reader in try store.readers() {
            #expect(try store.auditTrail(reader: reader) == stored.filter { $0.reader == reader }, "trial \(trial)")
        }
    }

    // MARK: 8. a crash in the middle of a rebuild

    @Test func aCrashInTheMiddleOfARebuildKeepsTheOldViews() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let (readers, days, seed) = F.mediumHistory
            let history = F.history(readers: readers, days: days, seed: seed)
            #expect(history.count > ReadingStore.rebuildChunkSize, "the rebuild needs more than one chunk")
            let before = try Self.makeStore(at: url, history)
            print("ReadingStore crash mid-rebuild: \(history.count) events")

            let child = try FacadeChild.run(["crash-rebuild", url.path])
            #expect(child.reason == .uncaughtSignal && child.status == SIGKILL, "\(child.lines)")
            #expect(child.value("digest") == before)
            // The first write transaction of the pass took whole readers until it had folded a chunk.
            let chunk = child.value("chunk")?.split(separator: " ").compactMap { UInt64($0) } ?? []
            #expect(chunk.count == 2 && chunk[0] >= UInt64(ReadingStore.rebuildChunkSize) && chunk[0] < UInt64(history.count)
                    && chunk[1] == UInt64(history.count), "\(child.lines)")

            let store = try ReadingStore.open(at: url)
            // The crash left a half-filled inactive generation behind: the test really crashed mid-rebuild.
            let (active, partial, partialRows) = try store.log.environment.read { txn -> (Int, UInt64, Int) in
                let active = try store.activeGeneration(txn)
                var rows = 0
                try store.generations[1 - active][.books].forEach(txn) { _, _ in rows += 1; return true }
                return (active, try store.checkpoint(txn, generation: 1 - active), rows)
            }
            // Readers written, but the shadow's checkpoint is still 0: it never looks folded.
            #expect(partial == 0)
            #expect(partialRows > 0)
            #expect(try store.viewCheckpoint() == UInt64(history.count))
            #expect(try store.viewDigest() == before)

            // The store keeps working on the old views, and a full rebuild still agrees.
            let report = try store.rebuild()
            #expect(report.digest == before)
            #expect(report.events == UInt64(history.count))
            let switched = try store.log.environment.read { txn in try store.activeGeneration(txn) }
            #expect(switched == 1 - active)
        }
    }
}
