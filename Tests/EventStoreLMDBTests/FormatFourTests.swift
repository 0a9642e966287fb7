import Foundation
import LMDB
import Projections
import ReadingEvents
import TestSupport
import Testing
@_spi(RawLog) @testable import EventStoreLMDB

/// Format 4 (issue 28): an append no longer writes a stream's version (`streams`), this replica's
/// head (`sync.vector`) or the clock (`sync.meta`): they are read from `streamIndex` and from the
/// replica's last origin. A format-3 store is migrated at open, and the clock never goes back.
@Suite struct FormatFourTests {
    typealias F = Facade

    /// Rewrites a store made by this build the way a format-3 build laid it out: every stream's
    /// version in `streams`, this replica's head in `sync.vector`, the latest stamp held as the
    /// clock; then marks the log format 3.
    static func rewriteAsFormatThree(at url: URL, replica: ReplicaID) throws {
        let log = try EventLog.open(at: url)
        let sync = try SyncTables(log: log)
        try log.environment.write { txn in
            var versions: [[UInt8]: UInt64] = [:]
            try txn.forEachRaw(log.streamIndex, from: nil, direction: .forward, prefix: nil) { key, _ in
                versions[Array(key.dropLast(8))] = try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: key[(key.count - 8)...]))
                return true
            }
            for (stream, version) in versions { try txn.putRaw(log.streams, stream, BigEndianUInt64.encode(version), flags: []) }
            var head: UInt64 = 0
            var latest: UInt64 = 0
            try txn.forEach(sync.origins) { key, entry in
                if key.0 == replica { head = max(head, key.1) }
                latest = max(latest, entry.stamp)
                return true
            }
            try txn.put(sync.vector, replica, head)
            try txn.put(sync.clock, "clock", latest)
            try txn.put(log.meta, "format", BigEndianUInt32.encode(3))
        }
    }

    @Test func aFormatThreeStoreIsMigratedAtOpenKeepingItsVectorChangesHeadAndClock() throws {
        try withTempDirectory { dir in
            let url = dir.child("three")
            let peerURL = dir.child("peer")
            let replica = ReplicaID(UUID(uuidString: "A0000000-0000-4000-8000-0000000000A4")!)
            let before: (vector: VersionVector, changes: [EventEnvelope], head: [UInt8]?, last: UInt64, digest: String, latest: UInt64)
            do {
                let store = try ReadingStore.open(at: url, replica: replica)
                try F.appendInChunks(store, F.history(readers: 1, days: 40, seed: 41))
                // Another replica's events, stamped later than this replica's (the clock is theirs).
                let peer = try ReadingStore.open(at: peerURL)
                try F.appendInChunks(peer, F.history(readers: 1, days: 20, seed: 42).map { envelope in
                    var later = envelope
                    later.recordedAt = Timestamp(microseconds: envelope.recordedAt.microseconds + 3_650 * 86_400_000_000)
                    return later
                })
                try store.merge(try peer.changes(since: VersionVector()))
                let all = try store.changes(since: VersionVector(), limit: 100_000)
                before = (try store.versionVector(), all, try store.log.environment.read { try $0.get(store.log.meta, "head") },
                          try store.lastPosition(), try store.viewDigest(), all.compactMap(\.origin?.stamp).max() ?? 0)
                #expect(before.vector.heads.count == 2)
            }
            try Self.rewriteAsFormatThree(at: url, replica: replica)
            #expect(throws: EventStoreError.formatNeedsMigration(found: 3, current: EventLog.formatVersion)) {
                _ = try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(readOnly: true))
            }

            let store = try ReadingStore.open(at: url)
            try store.log.environment.read { (txn: ReadTransaction) throws in
                #expect(try txn.get(store.log.meta, "format") == BigEndianUInt32.encode(4))
                #expect(try txn.count(store.log.streams) == 0)
                #expect(try txn.get(store.sync.vector, replica) == nil)
                #expect(try txn.get(store.log.meta, "head") == before.head)
            }
            #expect(try store.versionVector() == before.vector)
            #expect(try store.changes(since: VersionVector(), limit: 100_000) == before.changes)
            #expect(try store.lastPosition() == before.last)
            #expect(try store.viewDigest() == before.digest)
            #expect(try store.log.verify().isIntact)
            #expect(try store.verifyReplication() == [])
            // Appends after: the next sequence, a stamp after every stamp held, the stream versions
            // continued from `streamIndex`.
            let reader = before.changes[0].reader
            let stored = try store.execute(ReaderCommand.updateProfile(nickname: "after", imageFileName: nil, theme: nil),
                                           context: F.context(reader, "2025-01-01T09:00:00+09:00"))
            let origin = try #require(stored.first?.origin)
            #expect(origin.replica == replica && origin.sequence == before.vector[replica] + 1)
            #expect(origin.stamp > before.latest)
            let readerVersion = before.changes.filter { $0.stream == .reader(reader) }.count
            #expect(stored.first?.streamVersion == UInt64(readerVersion) + 1)
            #expect(try store.versionVector()[replica] == before.vector[replica] + 1)
            #expect(try store.changes(since: before.vector).map(\.eventID) == stored.map(\.eventID))
            #expect(try store.log.verify().isIntact)
            #expect(try store.verifyReplication() == [])
        }
    }

    /// The clock is read from the replica's last origin and the stored clock: after a reopen, after
    /// a merge of older stamps, and in a copy that continues as a new replica, a new local stamp is
    /// after every stamp held.
    @Test func theClockNeverGoesBackAfterAReopenAMergeOrACopy() throws {
        try withTempDirectory { dir in
            let url = dir.child("a")
            let reader = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-0000000000AA")!)
            func profile(_ store: ReadingStore, _ name: String, recorded: String) throws -> EventOrigin {
                let context = CommandContext(reader: reader, occurredAt: F.at("2025-01-01T09:00:00+09:00"), timeZone: "Asia/Seoul",
                                             recordedAt: F.at(recorded), commandID: EventID())
                let stored = try store.execute(ReaderCommand.updateProfile(nickname: name, imageFileName: nil, theme: nil), context: context)
                return try #require(stored.first?.origin)
            }
            var stamps: [UInt64] = []
            let first: ReplicaID
            do {
                let store = try ReadingStore.open(at: url)
                first = store.replica
                // Recorded by a device whose clock ran ten years ahead.
                stamps.append(try profile(store, "ahead", recorded: "2035-01-01T09:00:00+09:00").stamp)
            }
            do {
                let store = try ReadingStore.open(at: url)
                // A peer's older events merged, then a local event recorded at today's time.
                let peer = try ReadingStore.open(at: dir.child("peer"))
                _ = try profile(peer, "peer", recorded: "2025-02-01T09:00:00+09:00")
                try store.merge(try peer.changes(since: VersionVector()))
                stamps.append(try profile(store, "after merge", recorded: "2025-03-01T09:00:00+09:00").stamp)
            }
            do {
                let store = try ReadingStore.open(at: url)
                stamps.append(try profile(store, "after reopen", recorded: "2025-03-02T09:00:00+09:00").stamp)
            }
            // A copy of the directory continues as a new replica: the first replica becomes
            // another replica, with its head in the vector and its stamps under the clock.
            try FileManager.default.copyItem(at: url, to: dir.child("copy"))
            let copy = try ReadingStore.open(at: dir.child("copy"))
            #expect(copy.replica != first)
            #expect(try copy.versionVector()[first] == 3)
            let next = try profile(copy, "copy", recorded: "2025-03-03T09:00:00+09:00")
            #expect(next.replica == copy.replica && next.sequence == 1)
            stamps.append(next.stamp)
            #expect(stamps == stamps.sorted() && Set(stamps).count == stamps.count, "\(stamps)")
            #expect(try copy.verifyReplication() == [])
        }
    }

    /// A writer killed mid-run (`facade-execute`: one durable `execute` per event, stamped from its
    /// events' times in 2025): after the reopen and a merge of a peer's older event, a new local
    /// event recorded before all of them still gets a stamp after every stamp held and the next
    /// sequence (the clock and the head are read from what the killed writer committed).
    @Test func theClockNeverGoesBackAfterAKilledWriter() async throws {
        let dir = TempDirectory()
        defer { dir.remove() }
        let url = dir.child("store")
        do { _ = try ReadingStore.open(at: url) }
        let child = try HelperProcess(["facade-execute", url.path, "--prefix", "clock"])
        _ = await child.waitForLine(timeout: .seconds(120)) { $0.hasPrefix("ack ") }
        try await Task.sleep(for: .milliseconds(50))
        child.kill9()
        _ = child.waitForExit()
        let acks = child.lines.filter { $0.hasPrefix("ack ") }.count
        let store = try ReadingStore.open(at: url)
        let held = try store.changes(since: VersionVector(), limit: 1_000_000)
        #expect(held.count >= acks && acks > 0)
        let latest = try #require(held.compactMap(\.origin?.stamp).max())
        let peer = try ReadingStore.open(at: dir.child("peer"))
        let reader = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-0000000000AB")!)
        func profile(_ store: ReadingStore, _ name: String, recorded: String) throws -> EventOrigin {
            let context = CommandContext(reader: reader, occurredAt: F.at("2024-11-01T09:00:00+09:00"), timeZone: "Asia/Seoul",
                                         recordedAt: F.at(recorded), commandID: EventID())
            let stored = try store.execute(ReaderCommand.updateProfile(nickname: name, imageFileName: nil, theme: nil), context: context)
            return try #require(stored.first?.origin)
        }
        _ = try profile(peer, "peer", recorded: "2024-11-15T09:00:00+09:00")
        try store.merge(try peer.changes(since: VersionVector()))
        let next = try profile(store, "after the kill", recorded: "2024-12-01T09:00:00+09:00")
        #expect(next.stamp > latest, "\(next.stamp) after \(latest)")
        #expect(next.replica == store.replica && next.sequence == UInt64(held.count) + 1)
        #expect(try store.verifyReplication() == [])
    }

    /// An envelope naming this store's own replica at a sequence it never issued is refused also
    /// when it is a copy of an event held (it would otherwise be kept as an alias in this
    /// replica's origins, where its last origin is its head).
    @Test func aCopyNamingThisReplicasUnissuedSequenceIsQuarantined() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("a"))
            try F.appendInChunks(store, F.history(readers: 1, days: 10, seed: 43))
            let vector = try store.versionVector()
            var copy = try #require(try store.changes(since: VersionVector(), limit: 1).first)
            copy.origin?.sequence = vector[store.replica] + 5
            let result = try store.merge([copy])
            #expect(result.quarantined == 1 && result.alreadyHeld == 0, "\(result)")
            #expect(try store.versionVector() == vector)
            #expect(try store.verifyReplication() == [])
        }
    }
}
